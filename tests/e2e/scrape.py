"""scrape.py - read Prometheus text exposition with Prometheus' own parser
(python3-prometheus-client) for the e2e tests; not a test itself.

usage: scrape.py http HOST:PORT OUT   GET http://HOST:PORT/metrics
       scrape.py file FILE OUT        a node_exporter textfile

Writes OUT as JSON: {"samples": {"NAME{l1=v1,l2=v2}": value, ...},
"families": {NAME: {"type": T, "help": H}}, "content_type": C (http)}.
Exits 1 when the request fails, the status is not 200 or the text does
not parse."""
import json, sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families

mode, where, out = sys.argv[1:4]
ctype = None
if mode == "http":
    with urllib.request.urlopen("http://%s/metrics" % where, timeout=20) as r:
        if r.status != 200:
            sys.exit("status %d" % r.status)
        ctype = r.headers.get("Content-Type")
        text = r.read().decode("utf-8")
else:
    text = open(where, encoding="utf-8").read()
samples, families = {}, {}
for fam in text_string_to_metric_families(text):
    families[fam.name] = {"type": fam.type, "help": fam.documentation}
    for s in fam.samples:
        labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
        samples["%s{%s}" % (s.name, labels)] = s.value
json.dump({"samples": samples, "families": families, "content_type": ctype},
          open(out, "w"))
