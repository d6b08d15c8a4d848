"""Writes an ES256 JSON Web Key Set and JWTs signed with its key, for the JWT cases of scripts/bench/load.sh.

Usage: python3 scripts/bench/jwt_tokens.py --jwks FILE --tokens FILE [--count N] [--role read|write]

Each token (one per line) is another app's (`sub`), expires in an hour, and names the key `bench`,
so that a server started with `--jwks-file FILE` verifies each of them once.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import jwt_keys  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jwks", required=True)
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--role", default="write", choices=["read", "write"])
    options = parser.parse_args()
    key = jwt_keys.new_key()
    with open(options.jwks, "w") as file:
        json.dump(jwt_keys.jwks(key, "bench"), file)
    header = {"alg": "ES256", "kid": "bench", "typ": "JWT"}
    expiry = int(time.time()) + 3600
    with open(options.tokens, "w") as file:
        for index in range(options.count):
            claims = {"sub": f"app-{index}", "exp": expiry, "role": options.role}
            file.write(jwt_keys.sign(key, header, claims) + "\n")


if __name__ == "__main__":
    main()
