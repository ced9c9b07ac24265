"""The egress guard of the http and openai agents: what an admin-set URL may reach.

Every test connects to loopback only. A spy on `socket.socket.connect`
records where each connection was meant to go and sends it to the test's
gateway on 127.0.0.1 instead, so a refused destination is seen to get no
connection at all, and an allowed one (even 10.1.2.3) is seen to be the
address connected to, without leaving the machine.
"""

import datetime
import ipaddress
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.executors import HttpExecutor, OpenAIExecutor
from tests.engine.test_executor_http import call, gateway  # noqa: F401 - the fixture
from tests.engine.test_executor_openai import completion, request as openai_request

REFUSED = [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
    ("192.168.1.1", "private"), ("169.254.169.254", "link-local"), ("0.0.0.0", "unspecified"),
    ("::", "unspecified"), ("224.0.0.1", "multicast"), ("::ffff:127.0.0.1", "loopback"),
    ("100.64.0.1", "shared"), ("fd00::1", "private"), ("fe80::1", "link-local"), ("localhost", "loopback"),
]


@pytest.fixture
def connects(monkeypatch, gateway):  # noqa: F811 - the fixture
    """Where each outgoing connection was meant to go; every connection really reaches `gateway`."""
    attempts = []
    real_connect = socket.socket.connect
    port = gateway.server.server_address[1]

    def connect(sock, address):
        attempts.append((ipaddress.ip_address(address[0]).compressed, address[1]))
        target = ("127.0.0.1", port) if sock.family == socket.AF_INET else ("::ffff:127.0.0.1", port, 0, 0)
        return real_connect(sock, target)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


def url_of(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/steps" if ":" in host else f"http://{host}:{port}/steps"


def entry(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@pytest.mark.parametrize(("host", "kind"), REFUSED)
def test_a_non_public_destination_is_refused_before_any_connection(host, kind, gateway, connects):  # noqa: F811
    port = gateway.server.server_address[1]
    result = call(HttpExecutor(url_of(host, port) + "?token=s3cret", headers={"Authorization": "Bearer s3cret"}))

    assert not result.ok and result.error_code == "egress_refused"
    assert entry(host, port) in result.error and kind in result.error
    assert "s3cret" not in result.error and "/steps" not in result.error
    assert connects == [] and gateway.requests == []


@pytest.mark.parametrize(("host", "kind"), REFUSED)
def test_the_same_destination_is_reached_once_the_allow_list_names_it(host, kind, gateway, connects):  # noqa: F811
    port = gateway.server.server_address[1]
    gateway.answer(200, {"outputs": {"v": 1}})

    result = call(HttpExecutor(url_of(host, port), egress_allow=[entry(host, port)]))

    assert result.ok and result.outputs == {"v": 1}
    expected = {"127.0.0.1", "::1"} if host == "localhost" else {ipaddress.ip_address(host).compressed}
    assert len(connects) == 1 and connects[0][0] in expected and connects[0][1] == port
    assert [seen["path"] for seen in gateway.requests] == ["/steps"]


def test_another_port_of_an_allowed_host_stays_refused(gateway, connects):  # noqa: F811
    port = gateway.server.server_address[1]
    result = call(HttpExecutor(url_of("127.0.0.1", port), egress_allow=[f"127.0.0.1:{port + 1}"]))
    assert result.error_code == "egress_refused" and connects == []


class Resolver:
    """A stand-in for DNS: answers `host` with the next list of addresses, and counts the lookups."""

    def __init__(self, monkeypatch, host, *answers):
        self.host, self.answers, self.lookups = host, list(answers), 0
        real = socket.getaddrinfo

        def getaddrinfo(name, port, *args, **kwargs):
            if name != host:
                return real(name, port, *args, **kwargs)
            self.lookups += 1
            addresses = self.answers[min(self.lookups, len(self.answers)) - 1]
            return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                     (a, port, 0, 0) if ":" in a else (a, port)) for a in addresses]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_the_connection_goes_to_the_address_that_was_checked(monkeypatch, gateway, connects):  # noqa: F811
    # DNS rebinding: a public answer to the check, then loopback to whoever asks again
    resolver = Resolver(monkeypatch, "gateway.example", ["93.184.215.14"], ["127.0.0.1"])
    port = gateway.server.server_address[1]
    gateway.answer(200, {"outputs": {"v": 1}})

    result = call(HttpExecutor(f"http://gateway.example:{port}/steps"))

    assert result.ok
    assert resolver.lookups == 1
    assert connects == [("93.184.215.14", port)]
    assert gateway.requests[-1]["headers"]["Host"] == f"gateway.example:{port}"

    again = call(HttpExecutor(f"http://gateway.example:{port}/steps"))

    assert again.error_code == "egress_refused" and "resolves to 127.0.0.1" in again.error
    assert resolver.lookups == 2 and connects == [("93.184.215.14", port)] and len(gateway.requests) == 1


def test_every_address_a_host_resolves_to_is_checked(monkeypatch, gateway, connects):  # noqa: F811
    Resolver(monkeypatch, "mixed.example", ["93.184.215.14", "10.0.0.7"])
    port = gateway.server.server_address[1]

    result = call(HttpExecutor(f"http://mixed.example:{port}/steps"))

    assert result.error_code == "egress_refused" and "10.0.0.7" in result.error and "private" in result.error
    assert connects == [] and gateway.requests == []


def test_listing_an_address_opens_a_host_that_resolves_to_it(monkeypatch, gateway, connects):  # noqa: F811
    Resolver(monkeypatch, "gateway.internal", ["10.0.0.7"])
    port = gateway.server.server_address[1]
    gateway.answer(200, {"outputs": {"v": 1}})

    result = call(HttpExecutor(f"http://gateway.internal:{port}/steps", egress_allow=[f"10.0.0.7:{port}"]))

    assert result.ok and connects == [("10.0.0.7", port)]


def test_the_openai_agent_is_guarded_too(gateway, connects):  # noqa: F811
    port = gateway.server.server_address[1]
    executor = OpenAIExecutor(f"http://169.254.169.254:{port}/v1", "gpt-4o-mini", api_key="sk-never-sent")

    result = executor.execute(openai_request(), threading.Event())

    assert result.error_code == "egress_refused" and "169.254.169.254" in result.error
    assert "sk-never-sent" not in result.error and connects == [] and gateway.requests == []

    gateway.answer(200, completion("fine"))
    allowed = OpenAIExecutor(f"http://169.254.169.254:{port}/v1", "gpt-4o-mini", api_key=None,
                             egress_allow=[f"169.254.169.254:{port}"])
    assert allowed.execute(openai_request(), threading.Event()).stdout == "fine"
    assert connects == [("169.254.169.254", port)]


@pytest.mark.parametrize(("written", "canonical"), [
    ("Gateway.Example.:443", "gateway.example:443"), ("[::FFFF:127.0.0.1]:80", "[::ffff:7f00:1]:80"),
    (" 10.0.0.7:8080 ", "10.0.0.7:8080"),
])
def test_allow_list_entries_are_compared_in_one_spelling(written, canonical):
    from engine.executors.egress import allow_list

    assert allow_list([written]) == {canonical}


@pytest.mark.parametrize("written", ["::1:80", "[::1]", "gateway.example", "gateway.example:0",
                                     "gateway.example:65536", "gateway.example:http", ":80"])
def test_an_allow_list_entry_that_is_not_host_and_port_is_refused(written):
    from engine.executors.egress import allow_list

    with pytest.raises(ValueError, match="is not host:port"):
        allow_list([written])
    with pytest.raises(ValueError):
        HttpExecutor("https://gateway.example/", egress_allow=[written])


# -- https: TLS still checks the URL's host name, though the socket goes to a checked address ---------------------


def certificate(tmp_path, name: str):
    """A CA file and a server context whose certificate (signed by that CA) is for `name`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "forge test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(hours=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "server.pem").write_bytes(
        cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.pem")
    return tmp_path / "ca.pem", context


@pytest.fixture
def tls_gateway(tmp_path, monkeypatch):
    """An HTTPS gateway on 127.0.0.1 with a certificate for gateway.example; the names the clients asked for."""
    ca, context = certificate(tmp_path, "gateway.example")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # the client's default context trusts the test CA
    asked = []
    context.sni_callback = lambda sock, name, ctx: asked.append(name)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            asked.append(self.headers["Host"])
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.handle_error = lambda *args: None
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server.server_address[1], asked
    server.shutdown()
    server.server_close()


def test_https_verifies_the_certificate_and_sends_sni_for_the_urls_host(monkeypatch, tls_gateway):
    port, asked = tls_gateway
    Resolver(monkeypatch, "gateway.example", ["127.0.0.1"])

    result = call(HttpExecutor(f"https://gateway.example:{port}/steps", egress_allow=[f"gateway.example:{port}"]))

    assert result.ok, result.error
    assert asked == ["gateway.example", f"gateway.example:{port}"]


def test_https_to_a_host_the_certificate_does_not_name_fails(monkeypatch, tls_gateway):
    port, asked = tls_gateway
    Resolver(monkeypatch, "impostor.example", ["127.0.0.1"])

    result = call(HttpExecutor(f"https://impostor.example:{port}/steps", egress_allow=[f"impostor.example:{port}"]))

    assert not result.ok and "TLS" in result.error and "certificate" in result.error.lower()
    assert asked == ["impostor.example"]
