"""Man pages generated from the Click definitions, plus hand-written sections.

    python -m kdump.cli.manpage man/          # rewrite man/kdump.1 and man/kdump-<command>.1

OPTIONS and SYNOPSIS come from the commands themselves, so they cannot drift;
DESCRIPTION, EXIT STATUS, EXAMPLES and SEE ALSO are written here. ``tests/cli/test_docs.py``
fails when a committed page differs from what this module generates.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kdump import __version__

DATE = "2026-11-21"   # bumped by hand with the pages' content, so output is reproducible

EXIT_STATUS = [
    ("0", "Clean: everything read was intact (anomalies, states a broker accepts as they are, do not count "
          "unless --strict is given to verify, index, timeindex or txn)."),
    ("1", "Damage found (also when it was repaired): data a broker would cut, delete or fail to load, or that "
          "readers lose."),
    ("2", "Usage error: a bad option, or a PATH that names nothing kdump reads."),
    ("3", "Could not complete: missing file, permission, I/O error, a codec library is missing, a path that "
          "is not a regular file (a FIFO is refused, never waited on), a file truncated by another process "
          "while kdump read it, verify's output cut off (| head) before any damage was seen, not enough memory "
          "for a batch, a partition another kdump run is writing or whose broker is running (see --force), or a "
          "symbolic link where kdump would write."),
    ("130", "Interrupted."),
]

DESCRIPTIONS = {
    None: """kdump reads the files a Kafka broker keeps in its log.dirs \\(em segments in all three
message formats and every codec, offset and time indexes, transaction indexes, producer
snapshots, checkpoints, KRaft snapshots and metadata files \\(em and shows, checks and repairs
them. Every PATH may be a file, a partition directory or a whole log directory, on local disk
or on a remote store: \\fIs3://bucket/prefix\\fR (also \\fIs3a://\\fR), \\fIhdfs://namenode:port/path\\fR,
\\fIfile:///path\\fR. A remote PATH is read in byte ranges (needs the \\fIremote\\fR extra) by every
reading command; the writing options refuse it (exit status 2), and \\fBexport \\-\\-out\\fR may be
one too.
.PP
Nothing is ever modified unless a command is asked to (\\fB--truncate\\fR, \\fB--rebuild\\fR,
\\fB--apply\\fR, \\fB--salvage\\fR); then writes are atomic and what is cut is kept beside the file.
A writing command locks each partition directory it writes (\\fI.kdump.lock\\fR): a second run
on the same partition refuses at once (exit status 3), and so does a run while a broker holds
the log dir's \\fI.lock\\fR unless \\fB--force\\fR is given. A symbolic link is never written
through. Temporary files (\\fI*.kdump-tmp\\fR) of a killed run are removed by the next one.
.PP
Beside a broker in production, \\fB--io-limit\\fR \\fIMB/S\\fR (every reading command) keeps the
run, all its \\fB-j\\fR workers together, under that many megabytes a second, and drops from the
page cache what kdump read behind it, except the pages that were cached before (the broker's
hot ones).
.PP
Output is a Rich table on a terminal, kafka-dump-log.sh-compatible text when piped, and
NDJSON with \\fB--json\\fR. Diagnostics and progress go to standard error.
.PP
Names a client or a file controls (topics, group ids, transactional ids, features, header keys,
file names) are shown with their control characters escaped in every view for people: the C0
and C1 controls (ESC, U+009B, U+0085) as \\fI\\\\xNN\\fR, the bidi controls and zero-width
characters as \\fI\\\\uNNNN\\fR, so that no name can drive the terminal or pass for another. On a
terminal this holds for everything written; JSON there writes those characters as JSON escapes
(the same data), and exactly as they are to a pipe or a file.""",
    "dump": """Dumps record batches, and with \\fB--records\\fR every record, and with \\fB--data\\fR keys,
values and headers. The text view reproduces the lines of Kafka's DumpLogSegments
(kafka-dump-log.sh): \\fIDumping\\fR, \\fILog starting offset\\fR, the batch line, the
\\fI| offset:\\fR record line and \\fIFound N invalid bytes at the end of\\fR, so scripts written
for it keep working; control characters inside keys, values and header keys are escaped so each
record stays on one line (\\fB--escape none\\fR prints them raw: with kafka-dump-log.sh's own
command line, \\fB--files\\fR, the output to a pipe or a file is then its output byte for byte; a
terminal still gets them escaped). \\fB--json\\fR writes one object per batch (records inside)
with exact bytes.
.PP
With \\fB--files\\fR the closing report on standard error lists every offset gap as Kafka's does,
the first record of a segment not at offset 0 included (\\fI-1 is followed by N\\fR). With PATHS,
\\fB--records\\fR ends with kdump's own shorter report: only gaps that neither the start of the
listing (the log's start, \\fB--start-offset\\fR, \\fB--max-bytes\\fR) nor the log cleaner explains.
.PP
Internal topics are decoded automatically from the partition directory name
(__consumer_offsets, __transaction_state, __cluster_metadata, __remote_log_metadata,
__share_group_state) or with the decoder flags.
Offset and time filters seek with the .index and .timeindex when they pass a sanity check.
Damage does not stop the dump: everything that decodes is shown, then one error line per
problem with the file and byte position.""",
    "verify": """Checks segments and the files beside them without changing anything: framing, sizes,
magic, CRC, offsets within and across batches and segments, indexes against the log, the
transaction index against the COMMIT/ABORT markers, producer snapshot CRCs and the leader
epoch checkpoint. It reports exactly where a broker's recovery would truncate, and what lies
beyond the damage. \\fB--truncate\\fR cuts each damaged segment at its last good batch \\(em where
the broker's recovery would, or earlier where kdump finds damage the broker does not check
(\\fB--broker-cut\\fR keeps the broker's rule exactly) \\(em saving the cut bytes as
\\fI<name>.corrupt-<position>\\fR, and rebuilds indexes that no longer match the log. When later
segments follow the first cut segment of a partition, they are moved into
\\fIkdump-quarantine-<time>/\\fR inside the partition first (a broker's recovery deletes them), so
no offset gap is left behind.
.PP
Every finding has a class (listed under FINDINGS): \\fIdamage\\fR (exit status 1),
\\fIanomaly\\fR (odd but accepted by a broker as it is: exit status 0 unless \\fB--strict\\fR),
\\fIinfo\\fR (a state the broker finishes at startup) or \\fIerror\\fR (exit status 3).""",
    "index": """Lists, verifies, sanity-checks or rebuilds offset indexes (.index). \\fB--verify\\fR checks
every entry against the log in one forward pass and accepts both the 2.0+ (last offset) and
pre-2.0 (base offset) conventions; the zero-filled preallocated tail of an active segment is
recognised, not reported as damage. It prints the verdict; \\fB--entries\\fR lists every entry
before it. Nothing is created or modified unless \\fB--rebuild\\fR is given.
.PP
Each finding has the class \\fBkdump verify\\fR gives its kind (see \\fBkdump\\-verify\\fR(1)): damage
exits 1; an anomaly (an entry naming an offset compaction removed, a partial last entry) is
reported as a note and exits 0 unless \\fB--strict\\fR is given.""",
    "timeindex": """Lists, verifies, sanity-checks or rebuilds time indexes (.timeindex), in one forward pass
over the log (DumpLogSegments rescans the segment for every entry).
.PP
Each finding has the class \\fBkdump verify\\fR gives its kind (see \\fBkdump\\-verify\\fR(1)): damage
exits 1; an anomaly (an entry naming an offset compaction removed, a missing final entry) is
reported as a note and exits 0 unless \\fB--strict\\fR is given.""",
    "recover": """Shows what a broker would do to a log directory at startup (LogLoader): leftover
.cleaned, .swap and .deleted files, orphan indexes, the truncation point, later segments it
would delete (all of them when the log start offset is above the log end: then, as the
broker does in the same load, an empty segment is created at the log start offset), indexes to
rebuild, the .txnindex and leader-epoch-checkpoint as recovery writes them, the new recovery
point. \\fB--apply\\fR carries the plan out \\(em moving what a broker would delete into a
quarantine folder instead of deleting it. The plan is checked against a real Kafka broker
starting on the same damaged files (tests/kafka/test_recovery_parity.py). Departures from
the broker: what it deletes is moved to the quarantine and the bytes it cuts are saved as
<segment>.corrupt-<position>; the empty files it makes when it opens a segment (a missing
.index or .timeindex, a missing leader-epoch-checkpoint) and its producer snapshots are
left to it, as it makes them at its next start.
\\fB--salvage\\fR copies every intact batch found past the damage into new segment files.""",
    "export": """Exports records to Parquet (zstd, millisecond timestamps, partitioned by topic and
partition) or NDJSON, with a local engine (pyarrow) or on Spark (\\fB--engine spark\\fR,
\\fB--master\\fR).
.PP
Each Parquet row's \\fBtxn\\fR column says how its record's transaction ended, as
\\fBkdump records\\fR does: committed, aborted or open (from the control markers of the
partition, later segments included); null outside a transaction.
.PP
Damage becomes error rows (the \\fBerror\\fR column), never a failed export: exit status 1.
A record whose timestamp Kafka's long sum wrapped (\\fBtimestamp_overflow\\fR) keeps the
wrapped value, as Kafka's readers see it, where the format can hold it (NDJSON); a Parquet
timestamp cannot (null there); either way its batch gets an error row naming the value.
.PP
A partition directory that cannot be listed is reported (one error line naming it) and
the rest is exported; \\fB--out\\fR then holds \\fB_INCOMPLETE\\fR, one line per directory
not read, instead of \\fB_SUCCESS\\fR, and the exit status is 3. The rest is moved into
place because it is worth having, but without \\fB_SUCCESS\\fR no reader that waits for the
marker (Spark, Hadoop, kdump's own) takes it for the whole export; once the directory can
be read, run the export again with \\fB--overwrite\\fR. Spark's own writer
(\\fB--writer spark\\fR) would mark its output complete, so there the export is refused.""",
    "help": """Shows the manual page of kdump, or of one command, with \\fBman -l\\fR; the page is generated
from the installed commands, so it is there whatever way kdump was installed (an editable
install puts nothing under share/man). Without man(1) the page is printed as plain text.""",
    "info": """Summarises each partition from batch headers: segments, bytes, batches, records, offset
and time ranges, codecs, producers, transactional and control share, and a histogram of
batch sizes.""",
}

EXAMPLES = {
    None: [("See a log directory at a glance", "kdump info /var/lib/kafka/data"),
           ("Find a record by offset",
            "kdump dump /var/lib/kafka/data/orders-3 --data --start-offset 1200 --end-offset 1210"),
           ("Verify a log dir after a crash", "kdump verify /var/lib/kafka/data")],
    "dump": [("Records with keys, values and headers, as NDJSON", "kdump dump orders-3 --data --json | jq ."),
             ("A time window",
              "kdump dump orders-3 --records --start-time 2024-05-01T10:00:00Z --end-time 2024-05-01T10:05:00Z"),
             ("Committed consumer offsets", "kdump dump __consumer_offsets-28 --data"),
             ("Lossless binary values", "kdump dump 00000000000000000000.log --data --encoding base64 --json")],
    "verify": [("Check a whole log dir; exit status 1 on damage", "kdump verify /var/lib/kafka/data"),
               ("Report as NDJSON", "kdump verify orders-3 --json | jq 'select(.status != \"ok\")'"),
               ("Repair as a broker would, keeping what is cut", "kdump verify orders-3 --truncate")],
    "index": [("List entries", "kdump index 00000000000000000000.index"),
              ("Verify against the log", "kdump index orders-3 --verify"),
              ("Rebuild, keeping the old file as .bak", "kdump index 00000000000000000000.log --rebuild")],
    "timeindex": [("Verify in one pass", "kdump timeindex orders-3 --verify")],
    "recover": [("The plan a broker would follow", "kdump recover /var/lib/kafka/data"),
                ("Carry it out without asking", "kdump recover /var/lib/kafka/data --apply --yes"),
                ("Keep what lies past the damage", "kdump recover orders-3 --salvage /tmp/salvaged")],
    "export": [("Parquet, locally", "kdump export /var/lib/kafka/data --out /tmp/export"),
               ("On a Spark cluster", "kdump export /data --out /data/parquet --engine spark --master spark://host:7077")],
    "info": [("Summaries as NDJSON", "kdump info /var/lib/kafka/data --json")],
    "help": [("The manual page of dump", "kdump help dump")],
}


def _esc(text: str) -> str:
    """Escape roff specials in generated text (backslashes, leading dots and quotes)."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for line in text.splitlines():
        lines.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(lines)


def _option_lines(cmd: click.Command, ctx: click.Context) -> list[str]:
    out = []
    for param in cmd.get_params(ctx):
        if not isinstance(param, click.Option):
            continue
        rec = param.get_help_record(ctx)
        if rec is None:
            continue
        names, help_text = rec
        out += [".TP", f"\\fB{_esc(names)}\\fR", _esc(help_text or "")]
    return out


def _first_sentence(cmd: click.Command) -> str:
    """The command's first sentence whole (Click's short help cuts it at a width, with "...")."""
    text = " ".join((cmd.help or "").split("\n\n", 1)[0].split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


def _command_names() -> list[str]:
    from kdump.cli.app import cli

    return list(cli.list_commands(click.Context(cli, info_name="kdump")))


def render(name: str | None, cmd: click.Command, parent: click.Context | None = None) -> str:
    title = "kdump" if name is None else f"kdump-{name}"
    # The command's own context settings (-h/--help), as when the CLI runs.
    ctx = click.Context(cmd, info_name="kdump" if name is None else name, parent=parent, **cmd.context_settings)
    summary = (cmd.get_short_help_str(limit=200) if name else "forensic toolkit for Kafka log directories")
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    lines = [f'.TH {title.upper()} 1 "{DATE}" "kdump {__version__}" "kdump manual"',
             ".SH NAME", f"{title} \\- {_esc(summary.rstrip('.'))}",
             ".SH SYNOPSIS", f"\\fBkdump{'' if name is None else ' ' + name}\\fR {_esc(usage)}",
             ".SH DESCRIPTION", DESCRIPTIONS.get(name, _esc(cmd.help or ""))]
    if name is None:
        lines += [".SH COMMANDS"]
        for sub in cmd.list_commands(ctx):
            sc = cmd.get_command(ctx, sub)
            lines += [".TP", f"\\fBkdump {sub}\\fR", _esc(_first_sentence(sc)),
                      f"See \\fBkdump\\-{sub}\\fR(1)."]
    lines += [".SH OPTIONS", *_option_lines(cmd, ctx)]
    if name == "verify":
        from kdump.findings import KINDS

        lines += [".SH FINDINGS"]
        for k in KINDS.values():
            lines += [".TP", f"\\fB{_esc(k.name)}\\fR ({k.cls})", _esc(k.doc)]
    lines += [".SH EXIT STATUS"]
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", meaning]
    lines += [".SH EXAMPLES"]
    for what, example in EXAMPLES.get(name, []):
        lines += [".PP", _esc(what) + ":", ".PP", ".RS 4", f"\\f(CW{_esc(example)}\\fR", ".RE"]
    lines += [".SH ENVIRONMENT", ".TP", "\\fBNO_COLOR\\fR", "Disables colour in tables.",
              ".TP", "\\fBKDUMP_DEBUG\\fR", "Like \\fB\\-\\-debug\\fR: show tracebacks.",
              ".TP", "\\fBKDUMP_NO_SPEEDUPS\\fR", "Use the pure-Python decoder even where the C accelerator is built.",
              ".TP", "\\fBKDUMP_REMOTE_TIMEOUT\\fR, \\fBKDUMP_REMOTE_RETRIES\\fR",
              "For s3:// and hdfs:// PATHs: seconds one request may take (default 60) before the run ends with "
              "exit status 3, and attempts per S3 request (default 3).",
              ".TP", "\\fBKDUMP_REMOTE_LIST_TIMEOUT\\fR",
              "Seconds one listing of many pages may take in all (default 600; also stopped past 1 GiB of memory "
              "grown): an endpoint whose pages never end ends the run with exit status 3.",
              ".TP", "\\fBKDUMP_REMOTE_LIST_KEYS\\fR",
              "Keys one listing may hold (default 1000000): past them the run ends with exit status 3, the "
              "prefix and the keys listed named; raise it for a larger prefix.",
              ".TP", "\\fBKDUMP_SPOOL_DIR\\fR",
              "Where the local copies of remote ranges are kept while read (default: the temporary directory).",
              ".TP", "\\fBAWS_ENDPOINT_URL\\fR, \\fBAWS_REGION\\fR, \\fBAWS_PROFILE\\fR, \\fBAWS_ACCESS_KEY_ID\\fR ...",
              "S3's endpoint, region and credentials, as the AWS CLI reads them (also from ~/.aws/config and "
              "~/.aws/credentials)."]
    see = ["kdump(1)"] if name else []
    see += [f"kdump-{s}(1)" for s in sorted(_command_names()) if s != name]
    see += ["kafka-dump-log.sh (Apache Kafka)"]
    lines += [".SH SEE ALSO", ", ".join(see)]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """File name -> roff text, for the group and every command."""
    from kdump.cli.app import cli

    ctx = click.Context(cli, info_name="kdump", **cli.context_settings)
    out = {"kdump.1": render(None, cli)}
    for name in cli.list_commands(ctx):
        out[f"kdump-{name}.1"] = render(name, cli.get_command(ctx, name), ctx)
    return out


def main(argv: list[str]) -> None:
    target = Path(argv[0] if argv else "man")
    target.mkdir(parents=True, exist_ok=True)
    for fname, text in pages().items():
        (target / fname).write_text(text)
        print(target / fname)


if __name__ == "__main__":
    main(sys.argv[1:])
