"""Ask a running NCCL job's RAS thread for its status, raw (device machine, issue 21's recording).

    python3 bench/nccl_ras_probe.py [PORT] > ras.json

Speaks the exchange of NCCL's own client (src/ras/client.cc): a ``CLIENT PROTOCOL n`` line, answered by
``SERVER PROTOCOL m``; then optionally ``SET FORMAT json``; then ``STATUS`` / ``VERBOSE STATUS``, answered until
the server closes the socket. Every byte received is kept, with what was sent, bounded to 1 MiB and 15 s.
"""

import json
import socket
import sys
import time


def exchange(port, lines, limit=1 << 20, deadline_s=15.0):
    record = {"port": port, "sent": [], "received": [], "error": None}
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=3)
    except OSError as exc:
        record["error"] = f"connect: {exc}"
        return record
    end = time.monotonic() + deadline_s
    total = 0
    with sock:
        for line in lines:
            sock.sendall(line.encode() + b"\n")
            record["sent"].append(line)
            chunks = []
            while time.monotonic() < end and total < limit:
                sock.settimeout(max(0.1, min(2.0, end - time.monotonic())))
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    break  # this answer is complete, or the server waits for the next line
                except OSError as exc:
                    record["error"] = f"recv: {exc}"
                    break
                if not data:
                    chunks.append("<closed>")
                    break
                total += len(data)
                chunks.append(data.decode("utf-8", "replace"))
            record["received"].append("".join(chunks))
            if chunks and chunks[-1] == "<closed>":
                break
    return record


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 28028
    out = {}
    for proto in ("2", "1", "3"):
        out["json_verbose_p" + proto] = exchange(port, ["CLIENT PROTOCOL " + proto, "SET FORMAT json",
                                                         "VERBOSE STATUS"])
    out["text_status"] = exchange(port, ["CLIENT PROTOCOL 2", "STATUS"])
    out["bad_hello"] = exchange(port, ["HELLO"])
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
