"""Everything that only reads a sweep's records: status and summaries (`summaries`), the tables
the commands print, figures, our numbers beside the papers' tables (`paper_tables`), the
verdict, confirmation runs read back (`retrained`), the `--json` schemas (`outputs`), the one-file
report (`html`), export, and the dashboards (`dashboard`, `servers`).

May import `sweeper.spec` and `sweeper.store`; never `sweeper.run`, Ray or torch, so reading
results starts fast on any machine.
"""
