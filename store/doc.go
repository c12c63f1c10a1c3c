// Package store keeps a run directory's records: their formats, their
// atomic replacement, the run lock, prompt files, block records and the
// kept copies of files the engine moved aside.
//
// The layout of a run directory:
//
//	RUN/                          job outputs and the inputs setup placed
//	RUN/.custodian/               the state directory; no job may own a path in it
//	    run.json                  format, id, definition, parameters, patches, start time and version
//	    state.json                every job's record, workflow failures, owed moves
//	    effects/<name>.json       one effect's journal: started | completed
//	    reports.jsonl             the agent orchestrator's reports, one per line
//	    history/<seq>.jsonl       the events of the seq-th command that committed
//	    hashes                    the hash cache: derived data, rebuilt when missing
//	    lock                      locked by a running command, with the state directory
//	    round.json                the round of workers custodian drive has in flight
//	    jobs/<job>/prompt-<n>.md  the prompt of the job's n-th hand-out
//	    jobs/<job>/block-<n>.md   the job's n-th block record
//	    jobs/<job>/carried-by-step-<s>.md  a block that uncertain step s carried, uncounted
//	    jobs/<job>/kept/<k>-<name> a file moved aside; k counts across the run
//	    jobs/<job>/launch-<n>/    the evidence of custodian drive's n-th launch of the job
//	    workflow/block-<n>.md     block records of failures in the definition's code
//	    effect-blocks/<name>.md   the record of an effect's block or uncertain fate
//	    decision-blocks/<name>.md the record of a question the definition asks the operator
//
// The run directory is hostile ground: workers write anything in it. Every
// file of a run is reached through one confined tree (tree.go): the run
// directory is opened with os.OpenRoot, every directory below it one
// component at a time with openat and O_NOFOLLOW|O_DIRECTORY, so that no
// symbolic link and no ".." leads anywhere, and every file by a single
// name relative to its directory's descriptor; a bounded cache keeps the
// descriptors of the directories opened last. A file is opened with
// O_NOFOLLOW|O_NONBLOCK and checked with fstat before it is read: anything
// but a regular file is never read, and every read is bounded.
//
// The run lock (Run.Lock) is flock on a descriptor of the state directory
// itself, and on the lock file too, taken without waiting: a holder of
// either makes the next command fail with ErrBusy. Deleting or replacing
// the lock file lets no second writer in, and before every write, move and
// commit the state directory's identity (device and inode) is checked
// against the one locked: a command whose state directory was replaced
// while it held the lock writes nothing more, and fails with ErrBusy.
//
// Every record carries a format version. Reading is strict: a record with a
// missing, unknown or mistyped field, or another format, is refused with an
// error that wraps [ErrUntrusted]. Every name and path in a record is
// checked, and the records are checked against each other (the state names
// its run, and counts its history files and reports). Nothing in this
// package reads such a record as an ordinary state.
//
// The hash cache, .custodian/hashes, is derived data, not a record: it maps
// a file's identity to the SHA-256 of its bytes, and a missing, damaged or
// foreign cache is an empty one, rebuilt by hashing, never an error.
//
// Every record is written by one helper, Run.write: the bytes go to a
// temporary file in the target's directory, which is synced and renamed
// over the target, and then the directory itself is synced, so a record is
// either the old one or the new one, even across a power cut. Files are
// moved aside by Run.Perform, which syncs both directories; nothing is ever
// deleted.
package store
