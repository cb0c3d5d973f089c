"""hosts_stream.py - raw TCP between two emulated hosts, both ways at once:
what the shaped link and this machine's CPUs carry with no library on top
(bench/bench_hosts.sh runs it at every rate, beside the collectives).

    python3 hosts_stream.py recv PORT           accept one stream, read it to EOF
    python3 hosts_stream.py send ADDR PORT MB   send MB MiB, print "sent BYTES SECONDS"
"""
import socket
import sys
import time


def recv(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    conn, _ = srv.accept()
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    got = 0
    while True:
        n = conn.recv_into(view)
        if n == 0:
            break
        got += n
    conn.sendall(b"k")               # the sender's clock stops when all is read
    print("received %d" % got)


def send(addr, port, mib):
    block = memoryview(bytearray(1 << 20))
    for _ in range(200):             # the receiver may not be listening yet
        try:
            s = socket.create_connection((addr, port))
            break
        except OSError:
            time.sleep(0.01)
    else:
        sys.exit("hosts_stream: no receiver at %s:%d" % (addr, port))
    t0 = time.monotonic()
    for _ in range(mib):
        s.sendall(block)
    s.shutdown(socket.SHUT_WR)
    if s.recv(1) != b"k":
        sys.exit("hosts_stream: the receiver did not confirm")
    print("sent %d %.6f" % (mib << 20, time.monotonic() - t0))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "recv":
        recv(int(sys.argv[2]))
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
