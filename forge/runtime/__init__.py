"""Everything that turns the engine into a cluster, layered bottom-up (no module imports one above it):

queue, inbox          the queue client and the inbox keys (import nothing of the runtime)
stopping              whether the cluster is stopping, shared by its Sentinel with its workers
store, leases, bridge the round's SQL, who holds an attempt, rows <-> interpreters
agents                from an Agent row to the executor that calls it
effects               what a round writes, the one surface dispatch and children code use
completion            recording a step attempt's result
dispatch, children    carrying out Dispatch and the sub-workflow commands
rounds                `advance`: feeding a run's due inputs, round after round
recovery, execution   the periodic recovery and the worker's claim-run-record
broker                django-q2 brokers that keep the runtime's clock
tasks                 the django-q2 entry points, imported by nobody
cluster               the Sentinel of `manage.py qcluster` (management/commands), stopped cleanly by any signal
"""
