"""``storage/s3_listing``: the pages kdump asks for itself are signed as S3 checks them (moto's
server that checks every signature), wrong keys leave the listing to pyarrow, a log dir
of many pages is checked (dumped, its groups replayed) as they come, and one whose pages never
end stops at the cap, after what came before it. (Where the keys come from: tests/storage/test_aws_keys.py.)"""

from __future__ import annotations

import io

import pytest
from servers import FIXTURES, LOG_DIRS

from kdump.storage import remote, s3_listing
from kdump.storage.aws_keys import Keys

pytestmark = pytest.mark.slow


def test_pages_are_signed_as_s3_checks_them(s3_checking_keys):
    server = s3_checking_keys
    bucket, _, prefix = server.url.partition("s3://")[2].partition("/")
    listed = s3_listing.listed(server.endpoint, "us-east-1", Keys(*server.keys, None), bucket, prefix + "/")
    assert listed is not None
    assert sorted(name for name, is_dir, _ in listed if is_dir) == sorted(
        p.name for p in LOG_DIRS["generated"].iterdir() if p.is_dir())
    wrong = Keys(server.keys[0], "wrong secret", None)
    assert s3_listing.listed(server.endpoint, "us-east-1", wrong, bucket, prefix + "/") is None


class _Recorded(io.StringIO):
    """stdout, noting each write among the listing's page requests."""

    def __init__(self, events: list) -> None:
        super().__init__()
        self.events = events

    def write(self, s: str) -> int:
        if s:
            self.events.append(("out", s))
        return super().write(s)


@pytest.mark.parametrize("command", ["verify", "info", "dump"])
def test_a_log_dir_of_many_pages_is_checked_as_its_pages_come(s3, tmp_path, monkeypatch, command):
    """A listing of more than one page was taken whole before the first partition was read:
    now partitions are checked (and their reports written) while later pages are still to be
    asked for, and only those a topic's order still holds are kept. The output is that of
    the same log dir on disk, in its order: partitions by number ("t-10" is listed before
    "t-2"), the log dir's own files first, even those the listing reaches last."""
    from support.run import run_kdump

    local = tmp_path / "logs"
    names = [f"{t}-{p}" for t in ("a", "a-1", "b.x", "s", "z") for p in (0, 1, 2, 10)]
    for name in names:
        (local / name).mkdir(parents=True)
        (local / name / "00000000000000000000.log").write_bytes(b"")
    (local / "recovery-point-offset-checkpoint").write_text("0\n1\nz 10 0\n")
    (local / "meta.properties").write_text("version=0\nbroker.id=1\n")
    url = s3.upload("kdump-logs", local, f"paged-logs-{command}")
    prefix = url.partition("kdump-logs/")[2] + "/"
    events: list = []
    page = s3_listing.Lister.page

    def recorded(self, bucket, pfx, token, deadline, name=""):
        if pfx == prefix:
            events.append(("page", name))
        return page(self, bucket, pfx, token, deadline, *([name] if name else []))

    monkeypatch.setattr(s3_listing, "PAGE_KEYS", 3)
    monkeypatch.setattr(s3_listing.Lister, "page", recorded)
    r = run_kdump(command, url, out=_Recorded(events))
    expected = run_kdump(command, local)
    assert (r.code, r.out.replace(url, str(local))) == (expected.code, expected.out), r.err
    listing = [i for i, (kind, name) in enumerate(events) if kind == "page" and name == ""]
    written = [i for i, (kind, _) in enumerate(events) if kind == "out"]
    assert len(listing) >= 7
    assert written[0] < listing[-1]         # the first reports before the last page
    assert sum(listing[2] < i < listing[-1] for i in written) >= 8     # a topic at a time between pages
    assert ("page", "replication-offset-checkpoint") in events          # own files not reached: asked for


def _paged(monkeypatch, prefix: str, events: list, endless: int = 0) -> None:
    """Pages of 3 keys, each request noted in ``events`` ("page", the root's; "dir", a
    partition dir's); ``endless``: past the root's last page, pages of that many names
    sorting after every real one, each saying more follow."""
    page = s3_listing.Lister.page
    made = [0]

    def recorded(self, bucket, pfx, token, deadline, name=""):
        if pfx != prefix:
            events.append(("dir", pfx))
            return page(self, bucket, pfx, token, deadline, *([name] if name else []))
        events.append(("page", name))
        if token is not None and token.startswith("endless-"):
            got = s3_listing.Page([], None)
        else:
            got = page(self, bucket, pfx, token, deadline, *([name] if name else []))
        if not endless or name or got.next_token is not None:
            return got
        names = [(f"zzz-{made[0] + i:012d}.bin", False, 1) for i in range(endless)]
        made[0] += endless
        return s3_listing.Page(got.entries + names, f"endless-{made[0]}")

    monkeypatch.setattr(s3_listing, "PAGE_KEYS", 3)
    monkeypatch.setattr(s3_listing.Lister, "page", recorded)


def test_groups_take_a_log_dir_of_many_pages_as_they_come(s3, monkeypatch):
    """``groups`` (and every state command: ``state.source.LogDirs``) took a listing of many
    pages whole before listing a partition: now each partition dir is listed while the log
    dir's later pages are still to come. The output is that of the log dir on disk."""
    from support.run import run_kdump

    local = FIXTURES / "broker" / "all-shapes"
    url = s3.upload("kdump-logs", local, "paged-groups")
    events: list = []
    _paged(monkeypatch, url.partition("kdump-logs/")[2] + "/", events)
    r = run_kdump("groups", url, "--format", "text")
    expected = run_kdump("groups", str(local), "--format", "text")
    assert (r.code, r.out.replace(url, str(local))) == (expected.code, expected.out), r.err
    assert "__consumer_offsets" in r.out
    pages = [i for i, (kind, name) in enumerate(events) if kind == "page" and name == ""]
    dirs = [i for i, (kind, _) in enumerate(events) if kind == "dir"]
    assert len(pages) >= 7
    assert dirs[0] < pages[-1]          # a partition listed before the last page


def test_a_listing_without_end_stops_at_the_cap_after_what_came_before(s3, tmp_path, monkeypatch):
    """A server whose pages never end: ``dump`` shows every partition the listing gave
    before the cap, then stops with the cap's one line and exit 3; ``groups`` stops with the
    same line. The pages asked for end one past the cap: nothing is held beyond it."""
    from support.run import run_kdump

    local = tmp_path / "logs"
    for name in ("a-0", "a-1", "b-0"):
        (local / name).mkdir(parents=True)
        (local / name / "00000000000000000000.log").write_bytes(b"")
    (local / "meta.properties").write_text("version=0\nbroker.id=1\n")
    url = s3.upload("kdump-logs", local, "endless-logs")
    expected = run_kdump("dump", str(local))
    monkeypatch.setenv("KDUMP_REMOTE_LIST_KEYS", "500")
    for command in ("dump", "groups"):
        monkeypatch.setattr(remote, "_stores", {})      # (a store that stopped a run is not used again)
        events: list = []
        _paged(monkeypatch, url.partition("kdump-logs/")[2] + "/", events, endless=50)
        r = run_kdump(command, url)
        assert r.code == 3, r.err
        errors = [line for line in r.err.splitlines() if "error" in line]
        assert len(errors) == 1 and "more than 500" in errors[0], r.err
        assert "Traceback" not in r.err
        if command == "dump":
            assert r.out.replace(url, str(local)) == expected.out
        pages = [e for e in events if e == ("page", "")]
        assert len(pages) <= 500 // 50 + 3


def test_a_role_assumed_through_sts_lists_as_s3_checks_it(s3_checking_keys, tmp_path, monkeypatch):
    """A profile naming a role (``role_arn``, ``source_profile``): kdump's own AssumeRole,
    signed with the source profile's keys as STS checks them (moto's), gives the keys the
    listing is signed with; keys STS refuses give None (pyarrow lists)."""
    import json

    from kdump.storage import aws_keys

    server = s3_checking_keys
    iam = server.client("iam")
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"},
                                                     "Action": "sts:AssumeRole"}]}
    role = iam.create_role(RoleName="kdump-reader", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    iam.put_role_policy(RoleName="kdump-reader", PolicyName="p", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(aws_keys, "_kept", {})
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", server.endpoint)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_PROFILE", "reader")
    (tmp_path / "credentials").write_text(f"[base]\naws_access_key_id = {server.keys[0]}\n"
                                          f"aws_secret_access_key = {server.keys[1]}\n\n"
                                          f"[wrong]\naws_access_key_id = {server.keys[0]}\n"
                                          "aws_secret_access_key = not-the-secret\n")
    (tmp_path / "config").write_text(f"[profile reader]\nrole_arn = {role}\nsource_profile = base\n\n"
                                     f"[profile refused]\nrole_arn = {role}\nsource_profile = wrong\n")
    creds = aws_keys.keys()
    assert creds is not None and creds.access_key != server.keys[0] and creds.token
    bucket, _, prefix = server.url.partition("s3://")[2].partition("/")
    assert s3_listing.listed(server.endpoint, "us-east-1", creds, bucket, prefix + "/") is not None
    monkeypatch.setenv("AWS_PROFILE", "refused")
    assert aws_keys.keys() is None
