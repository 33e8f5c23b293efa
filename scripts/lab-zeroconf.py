#!/usr/bin/python3
"""An mDNS implementation that is not Avahi (python-zeroconf, Debian package python3-zeroconf),
for the lab's interoperability tests. Run it on a lab host whose avahi-daemon is stopped
(`scripts/lab avahi-stop N`), with `scripts/lab exec N /usr/bin/python3 scripts/lab-zeroconf.py ...`.
Prints one JSON object per line on stdout (flushed), errors on stderr.

  browse SECONDS [--expect K]
      browses _mentormate._tcp.local. and prints, for each instance resolved,
      {"event": "found", "name", "server", "addresses", "port", "txt", "ms"};
      exits after SECONDS, or once K instances were printed.
  impostor NAME ADDRESS PORT garbage|silent
      listens on ADDRESS:PORT (TCP) with something that is not MentorMate -- `garbage` sends 4 KiB
      of random bytes to whoever connects and keeps the connection open, `silent` accepts and
      never sends a byte -- and advertises it as a _mentormate._tcp instance NAME with TXT v=1.
      Prints {"event": "registered"}, then {"event": "connection", "peer": "HOST:PORT"} for
      every connection. SIGTERM withdraws the service (goodbye) and exits 0.
"""
import json
import os
import signal
import socket
import sys
import threading
import time

from zeroconf import IPVersion, ServiceBrowser, ServiceInfo, ServiceStateChange, Zeroconf

TYPE = "_mentormate._tcp.local."
started = time.monotonic()
out_lock = threading.Lock()


def emit(**fields):
    fields["ms"] = int((time.monotonic() - started) * 1000)
    with out_lock:
        sys.stdout.write(json.dumps(fields, sort_keys=True) + "\n")
        sys.stdout.flush()


def browse(seconds, expect):
    zc = Zeroconf(ip_version=IPVersion.V4Only)
    seen = set()
    done = threading.Event()

    def on_change(zeroconf, service_type, name, state_change):
        if state_change is not ServiceStateChange.Added or name in seen:
            return
        info = zeroconf.get_service_info(service_type, name, timeout=5000)
        if info is None:
            emit(event="unresolved", name=name)
            return
        seen.add(name)
        txt = {k.decode(): (v.decode() if v is not None else None) for k, v in info.properties.items()}
        emit(event="found", name=name[: -len(TYPE) - 1] if name.endswith("." + TYPE) else name,
             server=info.server, addresses=info.parsed_addresses(IPVersion.V4Only), port=info.port, txt=txt)
        if expect and len(seen) >= expect:
            done.set()

    browser = ServiceBrowser(zc, TYPE, handlers=[on_change])
    done.wait(seconds)
    browser.cancel()
    zc.close()


def impostor(name, address, port, mode):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((address, port))
    server.listen(16)
    stop = threading.Event()

    def serve(conn, peer):
        try:
            if mode == "garbage":
                conn.sendall(os.urandom(4096))
            while not stop.is_set():
                data = conn.recv(65536)
                if not data:
                    break
        except OSError:
            pass
        finally:
            conn.close()

    def accept():
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except OSError:
                return
            emit(event="connection", peer="%s:%d" % peer)
            threading.Thread(target=serve, args=(conn, peer), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    zc = Zeroconf(ip_version=IPVersion.V4Only)
    info = ServiceInfo(TYPE, name + "." + TYPE, addresses=[socket.inet_aton(address)], port=port,
                       properties={"v": "1"}, server="mm-impostor.local.")
    zc.register_service(info)
    emit(event="registered", name=name, address=address, port=port, mode=mode)

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.is_set():
        stop.wait(0.5)
    zc.unregister_service(info)
    zc.close()
    server.close()
    emit(event="stopped")


def main(argv):
    if len(argv) >= 2 and argv[0] == "browse":
        expect = int(argv[argv.index("--expect") + 1]) if "--expect" in argv else 0
        browse(float(argv[1]), expect)
    elif len(argv) == 5 and argv[0] == "impostor" and argv[4] in ("garbage", "silent"):
        impostor(argv[1], argv[2], int(argv[3]), argv[4])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
