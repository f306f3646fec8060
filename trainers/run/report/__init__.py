"""report.html: a run directory on one page that opens offline (no server, no network).

A training run (``trainers.at_grpo``, ``trainers.sft``) shows its config and provenance, the
curves of ``metrics.jsonl`` and ``eval.jsonl``, its evaluation episodes turn by turn (role,
prompt, reply, parsed answer or invalid reason, reward terms, the env's picture) with
filters, and the AT-GRPO trees it recorded (every node's K candidates with reward and
advantage, the selected one and zero-variance nodes marked). An evaluation
(``benchmarks.evaluate``) shows the tables of ``results.md``, bars with +-1 s.e. error bars and
its transcripts. ``write_report(run_dir)`` (re)writes ``run_dir/report.html`` from what is
on disk; ``python -m benchmarks.report <dir>`` does the same from the command line.

Model text is data: the page is rendered by Jinja2 with autoescaping on and nothing marked
safe, so a reply holding ``<script>`` shows as those characters.
"""

from trainers.run.report.page import REPORT_FILE, build_report, report_kind, write_report

__all__ = ["REPORT_FILE", "build_report", "report_kind", "write_report"]
