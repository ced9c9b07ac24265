"""What every client shows of runs (the console's pages, the API, the CLI): a run's view and report, a step's panel,
log and attempts, the inbox, the dashboard's board, and the live stream's reading. Each reads rows; none changes one."""
