package drive

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/custodian-run/custodian/workflow/engine"
)

// Settle is how long drive waits after a worker ends before it steps, so
// that workers ending close together are judged by one step. It is short
// against a worker's minutes, and long against a step's milliseconds.
const Settle = 150 * time.Millisecond

// flow is a drive's work in flight: the workers that run, the hand-outs
// that wait for a place, and whether a step is owed.
type flow struct {
	d        *driver
	running  map[string]*launched
	queue    []engine.Handout
	ended    chan *launched   // each worker's end, from its watcher
	done     chan struct{}    // closed when the drive ends: no watcher waits on it
	owed     bool             // a step is owed: a worker ended, or a launch failed
	settle   <-chan time.Time // set while ends settle before the step they owe
	pause    <-chan time.Time // set while a usage limit is waited out
	again    []engine.Handout // a usage limit's relaunch an interrupt or a stop held back
	lastStep int              // the run's last step, as this drive took it
	judged   int              // workers that ended since the last step, for the next to judge
	stopped  engine.Outcome   // the blocked or uncertain outcome that stops launching
	// inEffect is a step that ended inside an effect: drive launches
	// nothing more, and reports the stop once its workers end.
	inEffect *EndedInEffectError
	// fault is what keeps the drive from going on while its workers run: a
	// launch set-up that cannot launch what a step handed out, or a step
	// that failed (another command held the run). drive launches nothing
	// more, and fails with it once its workers end.
	fault error
}

// held returns the hand-outs the drive holds, for a step to leave alone:
// each running worker's, and each waiting for a place.
func (f *flow) held() map[string]int {
	held := map[string]int{}
	for name, l := range f.running {
		held[name] = l.h.Attempt
	}
	for _, h := range append(slices.Clone(f.queue), f.again...) {
		held[h.Name] = h.Attempt
	}
	return held
}

// stopping says whether the drive launches nothing more: a step blocked,
// was uncertain or ended inside an effect, a fault came, or a signal.
func (f *flow) stopping() bool {
	return f.stopped.Kind != "" || f.inEffect != nil || f.fault != nil || f.d.interrupted > 0
}

// drive drives the run until it is done, stops, or is interrupted. Work an
// earlier loop handed out and no one launched is launched before the first
// step judges it.
func (d *driver) drive() (status int, err error) {
	f := &flow{d: d, running: map[string]*launched{}, ended: make(chan *launched), done: make(chan struct{})}
	defer close(f.done)
	if err := d.held.BeginRound(); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			// The drive cannot go on (its records cannot be written): no
			// worker outlives it. Their leases stay in round.json, so the
			// next command finds them ended. A second Kill ends a group
			// at once, without its grace.
			for _, l := range f.running {
				l.w.Kill()
				l.w.Kill()
			}
			for _, l := range f.running {
				l.w.Wait()
			}
		}
	}()
	takeover, err := d.held.Unlaunched()
	if err != nil {
		return 0, err
	}
	f.owed = len(takeover) == 0
	if !f.owed {
		if err := d.check(takeover); err != nil {
			return 0, err
		}
		f.handOut(takeover)
		f.flowEvent(0)
	}
	for {
		if f.owed && !f.stopping() {
			f.owed = false
			status, done, err := f.step()
			if err != nil || done {
				return status, err
			}
			if f.stopping() {
				if err := f.dropQueue(); err != nil {
					return 0, err
				}
			}
		}
		if err := f.launch(); err != nil {
			return 0, err
		}
		if len(f.running) == 0 {
			switch {
			case f.stopping():
				return f.finish()
			case f.settle != nil || f.owed:
				// Every worker has ended: nothing is left to settle.
				f.settle, f.owed = nil, true
				continue
			case f.pause == nil:
				return 0, errors.New("the drive has nothing in flight and the run is not done: a defect in custodian")
			}
		}
		select {
		case l := <-f.ended:
			if err := f.end(l); err != nil {
				return 0, err
			}
		case <-f.settle:
			f.settle, f.owed = nil, true
		case <-f.pause:
			f.pause = nil
			d.sink.Emit(Event{Kind: EventResumed})
		case <-d.opts.Interrupts:
			d.interrupt(f.running)
		}
	}
}

// step takes a step beside the hand-outs the drive holds, and takes in
// what it decided: done says the drive has ended with status.
func (f *flow) step() (status int, done bool, err error) {
	d := f.d
	out, printed, err := d.step(f.held())
	var inEffect *EndedInEffectError
	switch {
	case errors.As(err, &inEffect):
		d.last = inEffect.Stdout
		f.inEffect = inEffect
		return 0, false, nil
	case err != nil && len(f.running) > 0:
		// The workers that run end on their own, and are recorded, before
		// drive fails with it.
		f.fault = err
		return 0, false, nil
	case err != nil:
		return 0, true, err
	}
	judged := f.judged
	f.judged = 0
	d.last = printed
	if f.lastStep, err = d.decided(out); err != nil {
		return 0, true, err
	}
	switch out.Kind {
	case engine.KindDone:
		if len(f.running) > 0 || len(f.queue) > 0 {
			f.fault = errors.New("a step gave done while the drive's workers ran: a defect in custodian")
			return 0, false, nil
		}
		status, err := d.finish(ExitDone)
		return status, true, err
	case engine.KindBlocked, engine.KindUncertain:
		// Nothing more is launched; the workers that run end on their own,
		// and what they write is the next step's to judge.
		f.stopped = out
		f.flowEvent(judged)
		return 0, false, nil
	}
	if d.pollInterrupt(f.running) {
		// A signal that came during the step: it is let finish, and
		// nothing is launched after it.
		return 0, false, nil
	}
	var fresh []engine.Handout
	held := f.held()
	for _, h := range out.Jobs {
		if _, ok := held[h.Name]; !ok {
			fresh = append(fresh, h)
		}
	}
	if err := d.check(fresh); err != nil {
		if len(f.running) == 0 {
			return 0, true, err
		}
		// The workers that run end on their own first; the new hand-outs
		// stay for the next drive, which takes them over.
		f.fault = err
		return 0, false, nil
	}
	f.handOut(fresh)
	f.flowEvent(judged)
	return 0, false, nil
}

// handOut queues hand-outs for launch and says so.
func (f *flow) handOut(jobs []engine.Handout) {
	if len(jobs) == 0 {
		return
	}
	names := make([]string, len(jobs))
	for i, h := range jobs {
		names[i] = h.Name
	}
	f.d.sink.Emit(Event{Kind: EventRound, Round: f.lastStep, Jobs: names})
	f.queue = append(f.queue, jobs...)
}

// launch starts queued hand-outs while there is a place for them: not
// while a usage limit is waited out, an interrupt or a stop has come.
func (f *flow) launch() error {
	d := f.d
	for len(f.queue) > 0 && f.pause == nil && !d.pollInterrupt(f.running) && !f.stopping() &&
		(d.opts.MaxParallel <= 0 || len(f.running) < d.opts.MaxParallel) {
		h := f.queue[0]
		f.queue = f.queue[1:]
		l, err := d.launch(h)
		if err != nil {
			return err
		}
		if l == nil {
			// Failed to launch, reported and recorded: the next step hands
			// it out again, not charged.
			f.owed = true
			continue
		}
		f.running[h.Name] = l
		go func() {
			l.w.Wait()
			select {
			case f.ended <- l:
			case <-f.done:
			}
		}()
	}
	return nil
}

// end records a worker's end: a usage limit's relaunch is queued again,
// and waits for the limit to lift.
func (f *flow) end(l *launched) error {
	d := f.d
	delete(f.running, l.h.Name)
	again, until, err := d.ended(l)
	if err != nil {
		return err
	}
	switch {
	case again && f.stopping():
		f.again = append(f.again, l.h)
	case again:
		f.queue = append([]engine.Handout{l.h}, f.queue...)
		if f.pause == nil {
			d.sink.Emit(Event{Kind: EventPaused, Job: l.h.Name, Until: until, Text: "the account hit a usage limit"})
			f.pause = time.After(time.Until(until))
		}
	default:
		// Its output is judged by a step once the ends close to it have
		// come too.
		f.judged++
		if f.settle == nil {
			f.settle = time.After(Settle)
		}
	}
	return nil
}

// flowEvent says how the work in flight stands after a step that judged
// the outputs of judged workers; the queued are launched next.
func (f *flow) flowEvent(judged int) {
	f.d.sink.Emit(Event{Kind: EventFlow, Flow: &Flow{Running: slices.Sorted(maps.Keys(f.running)),
		Queued: len(f.queue) + len(f.again), Judged: judged}})
}

// dropQueue records that the hand-outs waiting for a place are not
// launched: the next step hands them out again, not charged. drive does
// so as soon as it stops launching, not once its workers have ended, so
// that a drive killed meanwhile charges none of them either.
func (f *flow) dropQueue() error {
	if err := f.d.held.NotLaunched(append(f.queue, f.again...)); err != nil {
		return err
	}
	f.queue, f.again = nil, nil
	return nil
}

// finish ends the drive once no worker runs: what was queued is handed
// out again at the next step, not charged; a stop is reported.
func (f *flow) finish() (int, error) {
	d := f.d
	if err := f.dropQueue(); err != nil {
		return 0, err
	}
	if err := d.held.EndRound(); err != nil {
		return 0, err
	}
	switch {
	case f.inEffect != nil:
		e := f.inEffect
		if err := d.stop("", e.Error()); err != nil {
			return 0, err
		}
		if d.opts.Stderr != nil {
			fmt.Fprintf(d.opts.Stderr, "%scustodian: step ended with exit status %d, inside an effect; drive reported the stop: the operator establishes what took place\n", e.Stderr, e.Status)
		}
		return d.finish(ExitUncertain)
	case f.fault != nil:
		return 0, f.fault
	case d.interrupted > 0:
		return d.finish(ExitInterrupted)
	case f.stopped.Kind == engine.KindBlocked:
		if err := d.stopBlocked(f.stopped); err != nil {
			return 0, err
		}
		return d.finish(ExitBlocked)
	case f.stopped.Kind == engine.KindUncertain:
		if err := d.stop(StopReason(f.stopped)); err != nil {
			return 0, err
		}
		return d.finish(ExitUncertain)
	}
	return 0, errors.New("the drive ended with nothing to do and the run not done: a defect in custodian")
}
