// Package store keeps a run directory's records: their formats, their
// atomic replacement, the run lock, prompt files, block records and the
// kept copies of files the engine moved aside.
//
// The layout of a run directory:
//
//	RUN/                          job outputs and the inputs setup placed
//	RUN/.custodian/               the state directory; no job may own a path in it
//	    run.json                  format, definition, parameters, start time and version
//	    state.json                every job's record, workflow failures, owed moves
//	    effects/<name>.json       one effect's journal: started | completed
//	    reports.jsonl             the agent orchestrator's reports, one per line
//	    history/<seq>.jsonl       the events of the seq-th command that committed
//	    lock                      the file a running command locks; never deleted
//	    jobs/<job>/prompt-<n>.md  the prompt of the job's n-th hand-out
//	    jobs/<job>/block-<n>.md   the job's n-th block record
//	    jobs/<job>/carried-by-step-<s>.md  a block that uncertain step s carried, uncounted
//	    jobs/<job>/kept/<k>-<name> a file moved aside; k counts across the run
//	    workflow/block-<n>.md     block records of failures in the definition's code
//	    effect-blocks/<name>.md   the block record of an effect
//
// Every record carries a format version. Reading is strict: a record with a
// missing, unknown or mistyped field, or another format, is refused with an
// error that wraps [ErrUntrusted]. Nothing in this package reads such a
// record as an ordinary state.
//
// Every record is written by one helper, writeFile: the bytes go to a
// temporary file in the target's directory, which is synced and renamed over
// the target, and then the directory itself is synced, so a record is either
// the old one or the new one, even across a power cut. Files are moved aside
// by moveFile, which syncs both directories; nothing is ever deleted.
package store
