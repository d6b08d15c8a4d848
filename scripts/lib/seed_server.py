"""A seed-server process for the Python drivers of the scripts (server_crash.py, soak.py): started on
loopback with tokens from the environment, killed with SIGKILL, stopped with SIGTERM (bounded), and
a JSON call against it."""

import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request


class SeedServer:
    def __init__(self, bin_dir, database, work, name="server", environment=None):
        self.bin, self.database, self.work, self.name = bin_dir, database, work, name
        self.environment = environment or {}
        self.process, self.url = None, None

    def start(self):
        """Starts `serve` (on the same port as before after a restart); fails after 30 s without its line."""
        log = open(os.path.join(self.work, f"{self.name}.err"), "ab")
        port = "0" if self.url is None else self.url.rsplit(":", 1)[1]
        self.process = subprocess.Popen(
            [f"{self.bin}/seed-server", "serve", "--database", self.database, "--host", "127.0.0.1", "--port", port],
            stdout=subprocess.PIPE, stderr=log, env=dict(os.environ, **self.environment), text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith("listening on "):
                self.url = line.split()[-1]
                threading.Thread(target=self.process.stdout.read, daemon=True).start()
                return
            if not line and self.process.poll() is not None:
                break
        raise RuntimeError(f"seed-server did not start; see {self.name}.err")

    def resident_mib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        """SIGTERM, then SIGKILL after 30 s: returns the seconds the server took to exit, or None."""
        if not self.process or self.process.poll() is not None:
            return 0.0
        started = time.monotonic()
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
            return time.monotonic() - started
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None


def call(url, method, path, token, body=None, timeout=20):
    """Sends a JSON request; returns the status and the decoded answer (an error's too)."""
    request = urllib.request.Request(url + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")
