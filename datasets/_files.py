"""Where the shared data sets live, and checking them against their checksums."""
import hashlib
import os


def datasets_dir():
    """The folder holding gpuml's shared data sets: $GPUML_DATASETS, else ../shared/datasets."""
    override = os.environ.get("GPUML_DATASETS")
    if override:
        return override
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(repo_root, "..", "shared", "datasets")


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()
