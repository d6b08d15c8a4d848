"""ES256 keys and JWTs for the scripts that talk to a server taking JWTs (scripts/bench/load.sh,
scripts/suites/hostile-clients.sh), with the `cryptography` package.

As a command: python3 scripts/lib/jwt_keys.py --key FILE --jwks FILE [--kid KID]
writes a new P-256 private key (PEM) and the JSON Web Key Set of its public key, named KID.
"""
import argparse
import base64
import json

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def part(value: dict) -> str:
    return b64(json.dumps(value, separators=(",", ":")).encode())


def new_key():
    return ec.generate_private_key(ec.SECP256R1())


def load_key(path):
    with open(path, "rb") as file:
        return serialization.load_pem_private_key(file.read(), password=None)


def jwks(key, kid):
    numbers = key.public_key().public_numbers()
    return {"keys": [{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
                      "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}]}


def sign(key, header: dict, claims: dict) -> str:
    """A compact JWS of `claims` under `header`, signed ES256 with `key` whatever the header says."""
    signing_input = f"{part(header)}.{part(claims)}"
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{signing_input}.{b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", required=True)
    parser.add_argument("--jwks", required=True)
    parser.add_argument("--kid", default="k1")
    options = parser.parse_args()
    key = new_key()
    with open(options.key, "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    with open(options.jwks, "w") as file:
        json.dump(jwks(key, options.kid), file)


if __name__ == "__main__":
    main()
