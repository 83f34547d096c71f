"""The settings of kdump's object-store and HDFS calls: how long a call and a whole listing
may take, how many attempts an S3 request gets (the environment), and S3's endpoint and region
from the AWS config file, as the AWS CLI reads them."""

from __future__ import annotations

import os

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 3
# A listing (a request per 1,000 keys, each bounded by the library) as a whole, at most this long
# (KDUMP_REMOTE_LIST_TIMEOUT) and this much memory grown: pages that never end grow both.
DEFAULT_LIST_TIMEOUT, LIST_MEMORY, LIST_POLL = 600.0, 1 << 30, 0.2
# The keys one listing may hold (KDUMP_REMOTE_LIST_KEYS): a broker's log dir is thousands of
# partitions, a partition's dir tens of files; a million names is about 200 MB.
DEFAULT_LIST_KEYS = 1_000_000


def timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("KDUMP_REMOTE_TIMEOUT", DEFAULT_TIMEOUT)))
    except ValueError:
        return DEFAULT_TIMEOUT


def list_timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("KDUMP_REMOTE_LIST_TIMEOUT", DEFAULT_LIST_TIMEOUT)))
    except ValueError:
        return DEFAULT_LIST_TIMEOUT


def list_keys() -> int:
    try:
        return max(1, int(os.environ.get("KDUMP_REMOTE_LIST_KEYS", DEFAULT_LIST_KEYS)))
    except ValueError:
        return DEFAULT_LIST_KEYS


def too_many(n: int) -> str:
    """Why a listing of ``n`` keys was given up."""
    return (f"listed {n:,} keys, more than {list_keys():,} (KDUMP_REMOTE_LIST_KEYS raises the limit for a prefix "
            f"this large)")


def rss() -> int:
    """This process's resident memory in bytes (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def retries() -> int:
    try:
        return max(1, int(os.environ.get("KDUMP_REMOTE_RETRIES", DEFAULT_RETRIES)))
    except ValueError:
        return DEFAULT_RETRIES


def aws_config_value(name: str) -> str | None:
    """``name`` from the profile's section of the AWS config file (as the AWS CLI reads it)."""
    import configparser

    path = os.environ.get("AWS_CONFIG_FILE", os.path.expanduser("~/.aws/config"))
    profile = os.environ.get("AWS_PROFILE", "default")
    parser = configparser.ConfigParser()
    try:
        parser.read(path)
    except configparser.Error:
        return None
    section = profile if profile == "default" else f"profile {profile}"
    if not parser.has_section(section):
        return None
    return parser.get(section, name, fallback=None) or None


def aws_endpoint(service: str) -> str | None:
    """The endpoint a service's requests go to, as the AWS SDKs find it: ``AWS_ENDPOINT_URL_<SERVICE>``,
    ``AWS_ENDPOINT_URL``, the profile's ``services`` section for the service, the profile's
    ``endpoint_url``; None: AWS's own."""
    env = os.environ
    named = env.get(f"AWS_ENDPOINT_URL_{service.upper()}") or env.get("AWS_ENDPOINT_URL")
    if named:
        return named
    services = aws_config_value("services")
    if services:
        import configparser

        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(os.environ.get("AWS_CONFIG_FILE", os.path.expanduser("~/.aws/config")))
        except configparser.Error:
            parser = configparser.ConfigParser()
        nested = parser.get(f"services {services}", service, fallback="")     # "\nendpoint_url = URL"
        for line in nested.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "endpoint_url" and value.strip():
                return value.strip()
    return aws_config_value("endpoint_url")
