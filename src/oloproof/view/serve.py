"""`oloproof view`: the server (uvicorn) for the view's application, until Ctrl-C.

The socket is bound here, before the server starts, so a port in use is a usage error naming
it (exit 2) rather than a log line from the server; the server then serves on that socket.
It listens on 127.0.0.1 unless another host is given, and then says that the store's texts
can be read from elsewhere. It makes a token (`access`) and prints its address with it; with
`--no-token` it serves without one, and says that anyone on the machine can then read the
store.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path

import uvicorn

from oloproof.errors import UsageError
from oloproof.view.access import address_with, new_token
from oloproof.view.app import make_app

LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: Hosts that mean "every interface".
EVERYWHERE = ("0.0.0.0", "::", "")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or a UsageError naming the port when it is taken."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r} is not an address this machine has ({exc.strerror});"
                         " give an address such as 127.0.0.1") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} is in use on {host}: stop what listens there, or "
                             "give another port with --port N (--port 0 picks a free one)"
                             ) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise UsageError(f"port {port} on {host} may not be used by this user "
                             f"({exc.strerror}); give a port above 1023 with --port N") from None
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    """The address to open in a browser for a socket bound to `host`."""
    port = sock.getsockname()[1]
    shown = "127.0.0.1" if host in EVERYWHERE else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def allowed_hosts(host: str) -> list[str]:
    """The `Host` names the application answers: this host and the loopback names; any
    name when it listens everywhere (the user chose to be reached from elsewhere)."""
    if host in EVERYWHERE:
        return ["*"]
    return sorted({host, "127.0.0.1", "localhost"})


def exposure_warning(host: str) -> str | None:
    """What to say when the view listens beyond this machine."""
    if host in LOOPBACK:
        return None
    return (f"the view listens on {host or 'every interface'}, not only on this machine: the "
            "store's texts (case inputs, outputs, error messages) can be read by anyone who "
            "can reach this address. Use the default (127.0.0.1) unless that is what you mean.")


def no_token_warning(url: str) -> str:
    """What `--no-token` is told."""
    return (f"the view asks for no token (--no-token): any user or program on this machine "
            f"that can reach {url} reads every run's inputs, outputs and error messages; "
            "leave --no-token out unless that is what you mean")


def serve(store_path: Path, *, host: str, port: int, open_browser: bool,
          say: Callable[[str], None], on_ready: Callable[[str], None] | None = None,
          token: bool = True) -> None:
    """Serve the store at `store_path` read-only on host:port until interrupted.

    `say` prints a line for the user (the address, with the token); `on_ready(url)` is called
    once the server answers. `token=False` serves without a token (`--no-token`), warned."""
    sock = bind(host, port)
    url = url_of(sock, host)
    warning = exposure_warning(host)
    if warning:
        say(f"Warning: {warning}")
    secret = new_token() if token else None
    if secret is None:
        say(f"Warning: {no_token_warning(url)}")
    config = uvicorn.Config(make_app(store_path, allowed_hosts(host), token=secret),
                            log_level="warning", access_log=False, lifespan="off",
                            server_header=False)
    url = address_with(url, secret)
    server = uvicorn.Server(config)

    def when_started() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.02)
        if server.started:
            say(f"Oloproof view: {url} (the store {store_path}, read-only; Ctrl-C stops it)")
            if on_ready is not None:
                on_ready(url)
            if open_browser:
                webbrowser.open(url)

    threading.Thread(target=when_started, name="oloproof-view-started", daemon=True).start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn raises the Ctrl-C again once it has shut down
        pass
    finally:
        sock.close()
    say("Stopped.")
