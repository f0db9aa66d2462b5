
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

    def _topics_now(bootstrap):
        """The broker's topic names, by aiokafka's admin client on a loop of its own."""
        import asyncio
        from aiokafka.admin import AIOKafkaAdminClient

        async def ask(delete=()):
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
            await admin.start()
            try:
                if delete:
                    await admin.delete_topics(list(delete))
                return set(await admin.list_topics())
            finally:
                await admin.close()

        def run(delete=()):
            import concurrent.futures
            with concurrent.futures.ThreadPoolExecutor(1) as pool:  # never inside a test's running loop
                return pool.submit(asyncio.run, ask(delete)).result(timeout=60)
        return run

    @pytest.fixture(autouse=True)
    def _delete_the_tests_topics(request):
        """Each partition replica of rafka is a process: the topics a test made go when it ends."""
        if "kafka_server" not in request.fixturenames and "setup_test_class" not in request.fixturenames:
            yield
            return
        topics = _topics_now(os.environ["AIOKAFKA_BROKER"])
        try:
            before = topics()
        except Exception:  # the broker is not up yet or the test is serverless
            before = None
        yield
        if before is not None:
            try:
                made = topics() - before - {"__consumer_offsets", "__transaction_state"}
                if made:
                    topics(made)
            except Exception as e:  # cleanup only: never fail the test for it
                print(f"rafka: could not delete topics after the test: {e}")
