import pytest
from tiny_luke import build_tiny_luke, shared_available


def pytest_collection_modifyitems(config, items):
    if shared_available():
        return
    skip = pytest.mark.skip(reason="../shared (RoBERTa tokenizer files, ReCoRD samples) is not present")
    for item in items:
        if "needs_shared" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_luke_dir(tmp_path_factory):
    """A random tiny LUKE checkpoint saved like a Hub checkpoint (weights + tokenizer)."""
    if not shared_available():
        pytest.skip("../shared (RoBERTa tokenizer files) is not present")
    return build_tiny_luke(tmp_path_factory.mktemp("tiny-luke"))
