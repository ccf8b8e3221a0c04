"""Runs the grape CLI from Python tests: inputs as .npy files, outputs read back from out0.npy,
out1.npy, ... in return order."""
import os
import subprocess
import tempfile

import numpy as np


class GrapeError(Exception):
    pass


class Grape:
    def __init__(self, exe, timeout=300):
        self.exe = os.path.abspath(exe)
        self.timeout = timeout

    def _call(self, args):
        try:
            return subprocess.run([self.exe] + args, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise GrapeError(f"timed out after {self.timeout}s: grape {' '.join(args)}")

    def check(self, files):
        p = self._call(["check"] + list(files))
        if p.returncode != 0:
            raise GrapeError(f"grape check {' '.join(files)} exited {p.returncode}\n{p.stdout}{p.stderr}")
        return p

    def run(self, grp, entry=None, defines=None, weights=None, random_weights=None, inputs=None,
            backend="cpu"):
        """Returns the list of outputs (numpy arrays). weights: a .safetensors path."""
        with tempfile.TemporaryDirectory(prefix="grape_ex_") as tmp:
            args = ["run", grp]
            if entry:
                args += ["--entry", entry]
            for k, v in (defines or {}).items():
                args += ["-D", f"{k}={v}"]
            if weights is not None:
                args += ["--weights", weights]
            if random_weights is not None:
                args += ["--random-weights", str(random_weights)]
            for name, arr in (inputs or {}).items():
                path = os.path.join(tmp, f"in_{name}.npy")
                np.save(path, arr)
                args += ["--input", f"{name}={path}"]
            outdir = os.path.join(tmp, "out")
            args += ["--output", outdir, "--backend", backend]
            p = self._call(args)
            if p.returncode != 0:
                raise GrapeError(f"grape {' '.join(args)}\nexited {p.returncode}\n{p.stdout}{p.stderr}")
            outs = []
            while os.path.exists(os.path.join(outdir, f"out{len(outs)}.npy")):
                outs.append(np.load(os.path.join(outdir, f"out{len(outs)}.npy")))
            if not outs:
                raise GrapeError(f"grape {' '.join(args)}\nwrote no out0.npy to {outdir}")
            return outs
