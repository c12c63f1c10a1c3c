package drive

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/custodian-run/custodian/internal/proc"
)

// Outcome is how a worker's launch ended, in the word the evidence records.
type Outcome string

// The outcomes of a launch.
const (
	// Finished: the worker exited on its own, whatever its exit status. Only
	// the next step can tell whether it did its job.
	Finished Outcome = "finished"
	// FailedToStart: no process ran (a *StartError).
	FailedToStart Outcome = "failed-to-start"
	// TimedOut: the worker ran longer than Options.Timeout and was ended.
	TimedOut Outcome = "timed-out"
	// Idle: the worker wrote nothing for Options.Idle and was ended.
	Idle Outcome = "idle"
	// UsageLimited: the worker's output says the account hit a usage limit
	// (Result.Limit); the job is not at fault.
	UsageLimited Outcome = "usage-limited"
	// Killed: the caller ended the worker (an interrupt, a reclaim).
	Killed Outcome = "killed"
)

// DefaultKeep is how many bytes of each of a worker's output streams are
// kept when Options.Keep does not say.
const DefaultKeep = 1 << 20

// drainLimit bounds the wait for a worker's output streams to end once its
// group has been ended. Only a process that left the group (by setsid, say)
// can hold them open longer, and nothing waits for it.
const drainLimit = time.Second

// Options bound a worker, and say whom to tell what it writes.
type Options struct {
	Timeout time.Duration // the longest the worker may run; zero for no limit
	Idle    time.Duration // the longest it may write nothing on stdout and stderr; zero for no limit
	Grace   time.Duration // how long its group has between SIGTERM and SIGKILL
	Keep    int           // how many bytes of stdout, and of stderr, are kept (the tail); zero for DefaultKeep
	// Keeper, when set, is the command line of a keeper (KeepGroup), to
	// which Start adds the group and this process's pid: a process of the
	// worker's group that ends the whole group when this process dies, so
	// that no worker outlives the process that watches it, however that
	// process ends. The worker's leader dies with this process too. Linux
	// only; custodian-temporal's worker sets it.
	Keeper []string
	// OnLine, when set, is called with each line of output that says
	// something, made readable: an event's text, or the line itself. It is
	// called from the goroutines that read the worker's two streams, and
	// must not block; every call has returned when Wait returns.
	OnLine func(text string)
}

// Result is how a worker ended, and what it left.
type Result struct {
	Outcome   Outcome
	Started   time.Time
	Ended     time.Time   // when the worker's process exited
	ExitCode  int         // its exit status; -1 when a signal ended it
	Signal    string      // the signal that ended it, such as "SIGTERM"; empty when it exited
	SessionID string      // claude's session_id or codex's thread_id, when its output names one
	Message   string      // its final message: claude's result, codex's last agent message
	Limit     *UsageLimit // the usage limit its output reports, if any
	Stdout    Tail
	Stderr    Tail
}

// Status describes how the process ended: "exit 0", "signal SIGKILL".
func (r Result) Status() string {
	if r.Signal != "" {
		return "signal " + r.Signal
	}
	return "exit " + strconv.Itoa(r.ExitCode)
}

// Worker is a worker process that Start started, in a process group of its
// own, under watch.
type Worker struct {
	cmd     *exec.Cmd
	opts    Options
	pid     int
	start   string
	started time.Time

	// lastOutput is when the worker last wrote, in Unix nanoseconds.
	lastOutput atomic.Int64

	stdout, stderr *stream
	readers        sync.WaitGroup

	exited chan struct{} // closed when the leader has exited; ended says when
	ended  time.Time
	stop   chan struct{} // closed by the first Kill
	now    chan struct{} // closed by the second
	done   chan struct{} // closed when result is final
	result Result

	mu         sync.Mutex // guards what follows, which both streams' readers update
	transcript transcript
	lastLine   string
	kills      int
}

// stream is one of a worker's output streams.
type stream struct {
	f     *os.File
	tail  tailBuffer
	lines lineSplitter
}

// Start starts the worker c describes and returns as soon as it runs, so
// that the caller can record its lease (Pid and ProcessStart) before it
// waits. The worker's stdin is /dev/null, so that it never waits for input;
// it leads a process group of its own, which every way of ending it ends
// whole. A worker that cannot start is a *StartError, and leaves no process.
func Start(c *Command, o Options) (*Worker, error) {
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	fail := func(err error) (*Worker, error) { return nil, &StartError{Job: c.Job, Err: err} }
	if len(c.Args) == 0 {
		return fail(errors.New("the command line is empty"))
	}
	program, err := lookPath(c.Args[0], c.Env)
	if err != nil {
		return fail(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return fail(err)
	}
	// Files, not writers: os/exec then hands them to the process and copies
	// nothing, so that waiting for the process never waits for its pipes.
	cmd := &exec.Cmd{Path: program, Args: c.Args, Dir: c.Dir, Env: c.Env, Stdout: outW, Stderr: errW}
	inOwnGroup(cmd)
	if len(o.Keeper) > 0 {
		if err := diesWithParent(cmd); err != nil {
			closeAll(outR, outW, errR, errW)
			return fail(err)
		}
	}
	if len(o.Keeper) > 0 {
		err = startKept(cmd)
	} else {
		err = cmd.Start()
	}
	// The worker has its own copies; with these open, the streams would never end.
	closeAll(outW, errW)
	if err != nil {
		closeAll(outR, errR)
		return fail(err)
	}
	w := &Worker{
		cmd:     cmd,
		opts:    o,
		pid:     cmd.Process.Pid,
		started: time.Now(),
		stdout:  &stream{f: outR, tail: tailBuffer{max: o.Keep}},
		stderr:  &stream{f: errR, tail: tailBuffer{max: o.Keep}},
		exited:  make(chan struct{}),
		stop:    make(chan struct{}),
		now:     make(chan struct{}),
		done:    make(chan struct{}),
	}
	if len(o.Keeper) > 0 {
		if err := startKeeper(o.Keeper, w.pid); err != nil {
			// No worker runs unkept: end it before it does anything.
			_ = signalGroup(w.pid, syscall.SIGKILL)
			_ = cmd.Wait()
			closeAll(outR, errR)
			return fail(err)
		}
	}
	// Empty only where the system gives no start times (not Linux): Alive
	// and EndGroup then go by the pid alone.
	w.start, _ = proc.StartTime(w.pid)
	w.lastOutput.Store(w.started.UnixNano())
	w.readers.Add(2)
	go w.read(w.stdout)
	go w.read(w.stderr)
	go func() {
		awaitExit(cmd)
		w.ended = time.Now()
		close(w.exited)
	}()
	go w.supervise()
	return w, nil
}

// Pid returns the worker's process id, which is also its process group's.
func (w *Worker) Pid() int { return w.pid }

// Started returns when the worker started.
func (w *Worker) Started() time.Time { return w.started }

// ProcessStart returns the worker's start time, as ProcessStart gives it:
// with Pid, what a lease records to know the worker again.
func (w *Worker) ProcessStart() string { return w.start }

// LastLine returns the last line of output that said something, made
// readable, for a progress view.
func (w *Worker) LastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastLine
}

// Kill ends the worker at the caller's request: SIGTERM to its group, then
// SIGKILL after the grace period. A second call does not wait out the grace
// period. It returns at once; Wait says when the worker has ended. A worker
// that has already ended keeps its outcome.
func (w *Worker) Kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kills++
	switch w.kills {
	case 1:
		close(w.stop)
	case 2:
		close(w.now)
	}
}

// Wait waits until the worker has ended, its group with it, and its output
// has been read, and returns how it ended. It may be called any number of
// times, from any goroutine.
func (w *Worker) Wait() Result {
	<-w.done
	return w.result
}

func (w *Worker) read(s *stream) {
	defer w.readers.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.f.Read(buf)
		if n > 0 {
			w.lastOutput.Store(time.Now().UnixNano())
		}
		w.mu.Lock()
		s.tail.write(buf[:n])
		var texts []string
		take := func(line []byte) {
			if text := w.transcript.line(line); text != "" {
				w.lastLine = text
				texts = append(texts, text)
			}
		}
		s.lines.feed(buf[:n], take)
		if err != nil {
			s.lines.flush(take)
		}
		w.mu.Unlock()
		if w.opts.OnLine != nil {
			for _, text := range texts {
				w.opts.OnLine(text)
			}
		}
		if err != nil {
			return
		}
	}
}

func (w *Worker) supervise() {
	outcome := w.watch()
	// Whatever ended the leader, nothing of its group outlives it: a process
	// it left behind would run with nobody watching. The leader is not
	// reaped yet, so the group's id cannot have passed to another group.
	_ = signalGroup(w.pid, syscall.SIGKILL)
	<-w.exited
	// A signal is delivered when its target next runs; the group is ended
	// when its processes are gone, not when SIGKILL was sent.
	waitUntil(func() bool { return !proc.GroupLive(w.pid) }, killSettle)
	reap(w.cmd)
	w.drain()
	w.finish(outcome)
	close(w.done)
}

// watch waits for the leader to exit, or for a watchdog or the caller to
// end the worker, and returns the outcome.
func (w *Worker) watch() Outcome {
	var wall, idle <-chan time.Time
	if w.opts.Timeout > 0 {
		t := time.NewTimer(w.opts.Timeout)
		defer t.Stop()
		wall = t.C
	}
	var idleTimer *time.Timer
	if w.opts.Idle > 0 {
		idleTimer = time.NewTimer(w.opts.Idle)
		defer idleTimer.Stop()
		idle = idleTimer.C
	}
	for {
		select {
		case <-w.exited:
			return Finished
		case <-wall:
			return w.end(TimedOut)
		case <-idle:
			// Output re-arms the timer lazily: it fires once per idle
			// period at most, not once per write.
			if quiet := time.Since(time.Unix(0, w.lastOutput.Load())); quiet < w.opts.Idle {
				idleTimer.Reset(w.opts.Idle - quiet)
				continue
			}
			return w.end(Idle)
		case <-w.stop:
			return w.end(Killed)
		}
	}
}

// end asks the worker's group to end, for the reason why: SIGTERM, then the
// grace period for the leader to exit, cut short by a second Kill. The
// SIGKILL that follows is supervise's. A leader that exited on its own in
// the meantime has finished.
func (w *Worker) end(why Outcome) Outcome {
	select {
	case <-w.exited:
		return Finished
	default:
	}
	_ = signalGroup(w.pid, syscall.SIGTERM)
	grace := time.NewTimer(w.opts.Grace)
	defer grace.Stop()
	select {
	case <-w.exited:
	case <-grace.C:
	case <-w.now:
	}
	return why
}

// drain waits for both output streams to end, which they do once every
// process that holds them has ended; one that escaped the group could hold
// them for ever, so the wait is bounded, after which reading stops.
func (w *Worker) drain() {
	read := make(chan struct{})
	go func() {
		w.readers.Wait()
		close(read)
	}()
	limit := time.NewTimer(drainLimit)
	defer limit.Stop()
	select {
	case <-read:
	case <-limit.C:
		// Pipes are polled, so a deadline ends a read that is under way.
		_ = w.stdout.f.SetReadDeadline(time.Now())
		_ = w.stderr.f.SetReadDeadline(time.Now())
		<-read
	}
	closeAll(w.stdout.f, w.stderr.f)
}

func (w *Worker) finish(outcome Outcome) {
	ps := w.cmd.ProcessState
	r := Result{
		Outcome:  outcome,
		Started:  w.started,
		Ended:    w.ended,
		ExitCode: ps.ExitCode(),
		Signal:   exitSignal(ps),
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r.SessionID, r.Message = w.transcript.session, w.transcript.message
	r.Stdout, r.Stderr = w.stdout.tail.tail(), w.stderr.tail.tail()
	// A worker the caller killed stays killed: the caller is stopping.
	if r.Limit = w.transcript.limit.limit(w.ended); r.Limit != nil && outcome != Killed {
		r.Outcome = UsageLimited
	}
	w.result = r
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}
