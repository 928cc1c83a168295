"""The floor of an asyncssh client: connect, run one command, read its output, close; nothing else.

``bench/sweep_loopback.py`` runs this as a subprocess next to gpudiag, on the same hosts, with gpudiag's fan-out,
key exchange and cipher order (asyncssh's default key exchange; ``--encryption-algs`` gets
``gpudiag.transport.ssh.ENCRYPTION_ALGS``), so its client CPU per host is what any asyncssh sweep pays at least. Like
gpudiag it loads the key and reads known_hosts once. It imports nothing from gpudiag and prints one
``host: line`` per output line, as pdsh does::

    python3 bench/asyncssh_floor.py --port P --user U --key KEY --known-hosts FILE --fan-out 256 \\
        --encryption-algs "^aes128-gcm@openssh.com,aes256-gcm@openssh.com" --command "nvidia-smi ..." ADDRESS...
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import asyncssh


async def one(address: str, args: argparse.Namespace, keys: object, known: object,
              window: asyncio.Semaphore) -> str:
    async with window:
        try:
            async with asyncssh.connect(address, port=args.port, username=args.user, client_keys=keys,
                                        known_hosts=known, config=[], encryption_algs=args.encryption_algs,
                                        connect_timeout=10) as conn:
                done = await asyncio.wait_for(conn.run(args.command, encoding=None), 30)
        except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
            return f"{address}: failed: {exc}\n"
        out = done.stdout if isinstance(done.stdout, bytes) else b""
        return "".join(f"{address}: {line}\n" for line in out.decode(errors="replace").splitlines())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--known-hosts", required=True)
    parser.add_argument("--fan-out", type=int, default=256)
    parser.add_argument("--encryption-algs", default=())
    parser.add_argument("--command", required=True)
    parser.add_argument("addresses", nargs="+")
    args = parser.parse_args()
    keys, known = asyncssh.load_keypairs([args.key]), asyncssh.read_known_hosts([args.known_hosts])
    window = asyncio.Semaphore(args.fan_out)
    outputs = await asyncio.gather(*(one(a, args, keys, known, window) for a in args.addresses))
    sys.stdout.write("".join(outputs))


if __name__ == "__main__":
    asyncio.run(main())
