"""What the Python drivers share: a free port for the server they start, and the collector, the
socket through which their clients report back (accepted in the order the reports arrive, each
read to its end).

The drivers import it with `sys.dont_write_bytecode` set, so that running them leaves no
`__pycache__` in the tree."""
import socket


def free_port():
    """A port nobody listens on now (bound to port 0, read, closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collector:
    """A listening socket on 127.0.0.1 for `n` reports; `port` is where clients send them."""

    def __init__(self, n):
        self.n = n
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(n)
        self.port = self.sock.getsockname()[1]

    def reports(self):
        """The `n` reports as text, in the order their connections were accepted; then closes."""
        reports = []
        for _ in range(self.n):
            conn, _ = self.sock.accept()
            with conn:
                data = b""
                while chunk := conn.recv(100):
                    data += chunk
            reports.append(data.decode().strip())
        self.sock.close()
        return reports
