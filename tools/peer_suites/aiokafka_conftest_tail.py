
# --- rafka: run against a running broker (appended by rafka's tools/peer_suites.py) ---------
# With AIOKAFKA_BROKER=host:port set, the docker fixtures above are replaced by that broker.
# Tests that need docker inside the broker's container (ACLs, SCRAM users, Kerberos, SSL
# certificates) skip themselves through the stand-ins below.
if os.environ.get("AIOKAFKA_BROKER"):

    class _NeedsDocker:
        """Stands in for the container helpers (ACLManager, KafkaConfig, KerberosUtils)."""

        def __getattr__(self, name):
            pytest.skip("needs the Kafka docker container (ACLs, SCRAM users, Kerberos)")

    @pytest.fixture(scope="session")
    def docker(request):
        yield None

    @pytest.fixture(scope="session")
    def kafka_image(request):
        return request.config.getoption("--docker-image") or "aiolibs/kafka:2.13_2.8.1"

    @pytest.fixture(scope="session")
    def ssl_folder():
        return pathlib.Path("tests/ssl_cert")

    @pytest.fixture(scope="session")
    def kafka_server(kafka_image):
        host, _, port = os.environ["AIOKAFKA_BROKER"].rpartition(":")
        closed = 1  # a port nobody listens on: SSL and SASL listeners do not exist
        yield KafkaServer(host, int(port), closed, closed, closed, None)

    @pytest.fixture(scope="class")
    def acl_manager(kafka_server):
        return _NeedsDocker()

    @pytest.fixture(scope="class")
    def kafka_config(kafka_server):
        return _NeedsDocker()

    @pytest.fixture(scope="class")
    def kerberos_utils(kafka_server):
        return _NeedsDocker()
