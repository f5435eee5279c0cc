"""A TCP proxy for tests that partitions a process from PostgreSQL.

``Proxy(host, port)`` listens on a free local port and forwards every connection
to ``host:port``.  While :attr:`Proxy.refusing` is set, new connections are
closed at once (a partition for connection attempts) and the ones already open
keep working; :meth:`Proxy.cut` also closes the open ones whose client sent a
startup packet naming ``application_name``.
"""

from __future__ import annotations

import socket
import threading


class Proxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.refusing = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._closed = False
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self.refusing.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._closed = True
        self._server.close()
        with self._lock:
            for a, b in self._pairs:
                a.close()
                b.close()
