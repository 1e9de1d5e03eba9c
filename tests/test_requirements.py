"""The pinned requirement sets agree with each other."""

import re
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements"


def pins(name):
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (REQUIREMENTS / name).read_text(), re.M))


def test_the_s3_extra_pins_the_aws_sdk_the_s3_tests_run_against_and_base_txt_s_versions():
    # STORAGE_BACKEND=storages.backends.s3.S3Storage needs boto3, which base.txt leaves out
    s3, dev, base = pins("s3.txt"), pins("dev.txt"), pins("base.txt")
    assert "boto3" in s3 and "botocore" in s3
    assert "boto3" not in base
    for package, version in s3.items():
        assert dev.get(package) == version, f"{package}: s3.txt {version}, dev.txt {dev.get(package)}"
        assert base.get(package, version) == version, f"{package}: s3.txt {version}, base.txt {base[package]}"
