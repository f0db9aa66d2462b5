#!/usr/bin/env bash
# Installs what rafka needs from Debian when it is missing: Java (17+, for ZooKeeper and
# PySpark), Apache ZooKeeper's jars (package `zookeeper`) and kcat. Never starts a system service.
set -euo pipefail
missing=()
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
# PySpark 4 (the Spark bridge's tests) needs Java 17 or later; Debian 12's default is 17.
if command -v java >/dev/null 2>&1; then
  java_major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  [ "${java_major:-0}" -ge 17 ] || missing+=(openjdk-17-jre-headless)
fi
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "rafka needs these Debian packages: ${missing[*]} — install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "installing ${missing[*]} from Debian (apt-get)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The package may enable a system ZooKeeper service; rafka runs its own, so stop it.
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now zookeeper >/dev/null 2>&1 || true; fi
