"""Writes an ES256 JSON Web Key Set and JWTs signed with its key, for the JWT cases of scripts/bench/load.sh.

Usage: python3 scripts/bench/jwt_tokens.py --jwks FILE --tokens FILE [--count N] [--role read|write]

Each token (one per line) is another app's (`sub`), expires in an hour, and names the key `bench`,
so that a server started with `--jwks-file FILE` verifies each of them once. Needs the `cryptography`
package (installed by load.sh when missing).
"""
import argparse
import base64
import json
import time

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def part(value: dict) -> str:
    return b64(json.dumps(value, separators=(",", ":")).encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jwks", required=True)
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--role", default="write", choices=["read", "write"])
    options = parser.parse_args()
    key = ec.generate_private_key(ec.SECP256R1())
    numbers = key.public_key().public_numbers()
    jwk = {"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": "bench",
           "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}
    with open(options.jwks, "w") as file:
        json.dump({"keys": [jwk]}, file)
    header = part({"alg": "ES256", "kid": "bench", "typ": "JWT"})
    expiry = int(time.time()) + 3600
    with open(options.tokens, "w") as file:
        for index in range(options.count):
            signing_input = f"{header}.{part({'sub': f'app-{index}', 'exp': expiry, 'role': options.role})}"
            r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
            file.write(f"{signing_input}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}\n")


if __name__ == "__main__":
    main()
