#!/usr/bin/env python3
"""deploy/'s Grafana dashboard and Prometheus alert rules against the metrics streamd exports.

Every streamd_* metric the dashboard or the rules name must be one docs/OPERATIONS.md §Monitoring
documents (the table kept with the code), so a renamed metric cannot leave a dashboard panel or an
alert silently empty. The dashboard must be valid JSON with a query in every panel, every rule an
alert with an expression, a severity and a summary. With promtool on PATH, it checks the rules too.
"""
import json
import re
import shutil
import subprocess
import sys

root = sys.argv[1]
operations = open(f"{root}/docs/OPERATIONS.md").read()
documented = set(re.findall(r"`(streamd_[a-z_]+)", operations))
failures = []


def used_metrics(text):
    names = set(re.findall(r"\b(streamd_[a-z_]+)", text))
    # Histograms are queried through their series.
    return {re.sub(r"_(bucket|sum|count)$", "", n) for n in names}


dashboard_text = open(f"{root}/deploy/grafana/streamd-dashboard.json").read()
dashboard = json.loads(dashboard_text)
for panel in dashboard["panels"]:
    if not panel.get("targets") or not all(t.get("expr") for t in panel["targets"]):
        failures.append(f"dashboard panel {panel.get('title')!r} has no query")
rules_text = open(f"{root}/deploy/prometheus/streamd-alerts.yaml").read()
alerts = re.split(r"\n\s*- alert: ", rules_text)[1:]
if len(alerts) < 5:
    failures.append(f"only {len(alerts)} alert rules found")
for alert in alerts:
    name = alert.split("\n", 1)[0].strip()
    for part in ("expr:", "severity:", "summary:"):
        if part not in alert:
            failures.append(f"alert {name} has no {part}")

for source, text in (("dashboard", dashboard_text), ("alert rules", rules_text)):
    for metric in sorted(used_metrics(text) - documented):
        failures.append(f"{source} uses {metric}, which docs/OPERATIONS.md does not list")

promtool = shutil.which("promtool")
if promtool:
    r = subprocess.run([promtool, "check", "rules", f"{root}/deploy/prometheus/streamd-alerts.yaml"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        failures.append("promtool: " + r.stdout + r.stderr)

for f in failures:
    print("FAIL:", f)
print(f"deploy files: {len(dashboard['panels'])} panels, {len(alerts)} alerts, "
      f"{len(used_metrics(dashboard_text) | used_metrics(rules_text))} streamd metrics checked"
      + ("" if promtool else " (promtool not installed: rules not compiled)"))
sys.exit(1 if failures else 0)
