package drive

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"
)

// redrawEvery is how often the live view is redrawn at most: often enough
// for a clock to tick, seldom enough not to flicker.
const redrawEvery = 250 * time.Millisecond

// Live is the view for a terminal: a frame redrawn in place that shows the
// drive's last step, how many of the jobs it handed out are running,
// queued, finished and killed,
// each running job's time and last line of output, and a countdown while a
// usage limit is waited out. Events other than output also go above the
// frame as plain lines, which stay in the terminal's scrollback.
type Live struct {
	out  writer
	size func() (width, height int)
	now  func() time.Time

	view  view     // guarded by out.mu, as is what follows
	log   []string // lines to write above the frame at the next redraw
	drawn int      // lines of the frame on the screen
	shown string   // the frame on the screen

	stop    chan struct{}
	stopped chan struct{}
	close   sync.Once
}

// NewLive returns a live view on w, a terminal whose size the size
// function gives (a width or height of zero means unknown), with the clock
// now. It redraws from a goroutine of its own until Close.
func NewLive(w io.Writer, size func() (width, height int), now func() time.Time) *Live {
	l := &Live{out: writer{w: w}, size: size, now: now, stop: make(chan struct{}), stopped: make(chan struct{})}
	go l.redraw()
	return l
}

// Emit updates the view; the next redraw shows it.
func (l *Live) Emit(e Event) {
	stamp(&e, l.now)
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	l.view.apply(e)
	if e.logged() {
		l.log = append(l.log, e.Time.Format(time.TimeOnly)+" "+e.String())
	}
}

// Close stops redrawing and draws the last frame, which stays on the
// screen. It returns the first error in writing.
func (l *Live) Close() error {
	l.close.Do(func() {
		close(l.stop)
		<-l.stopped
		l.out.mu.Lock()
		defer l.out.mu.Unlock()
		l.draw()
	})
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	return l.out.err
}

func (l *Live) redraw() {
	defer close(l.stopped)
	t := time.NewTicker(redrawEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.out.mu.Lock()
			l.draw()
			l.out.mu.Unlock()
		case <-l.stop:
			return
		}
	}
}

// draw replaces the frame on the screen, when it changed, after writing
// the lines logged since; out.mu must be held.
func (l *Live) draw() {
	width, height := l.size()
	if width <= 0 {
		width = 80
	}
	if height <= 0 {
		height = 24
	}
	frame := strings.Join(l.view.frame(l.now(), width, height), "\n") + "\n"
	if len(l.log) == 0 && frame == l.shown {
		return
	}
	var b strings.Builder
	if l.drawn > 0 {
		// Up to the frame's first line, and clear from there down.
		fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", l.drawn)
	}
	for _, line := range l.log {
		b.WriteString(line + "\n")
	}
	b.WriteString(frame)
	l.out.write(b.String())
	l.log, l.drawn, l.shown = l.log[:0], strings.Count(frame, "\n"), frame
}

// view is the state the live view shows, kept up to date by events.
type view struct {
	step        int        // the drive's last step
	jobs        []*jobView // the jobs handed out, in the order they were
	pausedUntil time.Time
	outcome     string // the last step's outcome
	// accepted and refused are what the last step judged of the workers'
	// outputs: a worker that finished may have written one it refused.
	accepted, refused int
	interrupted       bool
}

type jobState int

const (
	queued jobState = iota
	running
	finished
	killed // ended by drive, by a timeout, or never started
)

type jobView struct {
	name  string
	state jobState
	since time.Time // when it was launched
	line  string    // its last line of output
}

func (v *view) apply(e Event) {
	switch e.Kind {
	case EventRound:
		// Handed out while others run: each joins the view, queued.
		for _, name := range e.Jobs {
			*v.job(name) = jobView{name: name}
		}
	case EventLaunched:
		*v.job(e.Job) = jobView{name: e.Job, state: running, since: e.Time}
	case EventOutput:
		v.job(e.Job).line = e.Text
	case EventEnded:
		switch Outcome(e.Outcome) {
		case Finished:
			v.job(e.Job).state = finished
		case UsageLimited:
			v.job(e.Job).state = queued // it is launched again once the limit lifts
		default:
			v.job(e.Job).state = killed
		}
	case EventLaunchFailed:
		v.job(e.Job).state = killed
	case EventPaused:
		v.pausedUntil = e.Until
	case EventResumed:
		v.pausedUntil = time.Time{}
	case EventStep:
		v.step, v.outcome = e.Round, e.Outcome
	case EventDecided:
		if d := e.Decided; d != nil {
			v.accepted, v.refused = len(d.Accepted), len(d.Refused)
		}
	case EventInterrupted:
		v.interrupted = true
	}
}

// job returns the job called name, adding it to the view if it is not
// there.
func (v *view) job(name string) *jobView {
	for _, j := range v.jobs {
		if j.name == name {
			return j
		}
	}
	j := &jobView{name: name}
	v.jobs = append(v.jobs, j)
	return j
}

// maxNameCells bounds the column of job names.
const maxNameCells = 24

// frame renders the view as lines that each fit in width-1 cells (a line
// that filled the last column could wrap, and the redraw would move up one
// line too few), and that fit in height-1 lines.
func (v *view) frame(now time.Time, width, height int) []string {
	var count [killed + 1]int
	var active []*jobView
	names := 0
	for _, j := range v.jobs {
		count[j.state]++
		if j.state == running {
			active = append(active, j)
			names = max(names, min(cells(j.name), maxNameCells))
		}
	}
	head := fmt.Sprintf("%d running · %d queued · %d finished · %d killed",
		count[running], count[queued], count[finished], count[killed])
	if v.outcome != "" {
		step := "last step"
		if v.step > 0 {
			step = fmt.Sprintf("last step %d", v.step)
		}
		head += " · " + step + ": " + v.outcome
		if v.accepted+v.refused > 0 {
			head += fmt.Sprintf(", %d accepted, %d refused", v.accepted, v.refused)
		}
	}
	var tail []string
	if !v.pausedUntil.IsZero() {
		tail = append(tail, fmt.Sprintf("paused for a usage limit: launching again at %s, in %s",
			v.pausedUntil.In(now.Location()).Format(time.TimeOnly), clock(v.pausedUntil.Sub(now))))
	}
	if v.interrupted {
		tail = append(tail, "interrupted: ending the workers")
	}
	lines := []string{head}
	shown, room := active, max(0, height-2-len(tail))
	if len(active) > room {
		shown = active[:max(0, room-1)]
	}
	for _, j := range shown {
		name := fit(j.name, names)
		lines = append(lines, fmt.Sprintf("  %s%s  %8s  %s", name, strings.Repeat(" ", names-cells(name)), clock(now.Sub(j.since)), j.line))
	}
	if more := len(active) - len(shown); more > 0 && room > 0 {
		lines = append(lines, fmt.Sprintf("  … and %d more running", more))
	}
	lines = append(lines, tail...)
	for i, line := range lines {
		lines[i] = strings.TrimRight(fit(line, width-1), " ")
	}
	return lines
}

// clock renders a duration as a clock does: 1:02, 1:02:03.
func clock(d time.Duration) string {
	s := int(max(0, d).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// fit cuts s to n cells of a terminal, marking the cut with an ellipsis.
func fit(s string, n int) string {
	switch {
	case cells(s) <= n:
		return s
	case n <= 0:
		return ""
	}
	used := 0
	for i, r := range s {
		if used+cells(string(r)) > n-1 {
			return s[:i] + "…"
		}
		used += cells(string(r))
	}
	return s
}

// cells returns how many terminal cells s takes: two for the wide
// characters of East Asian scripts and emoji, none for combining marks.
func cells(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r):
		case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf, r >= 0xac00 && r <= 0xd7a3,
			r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f, r >= 0xff00 && r <= 0xff60,
			r >= 0xffe0 && r <= 0xffe6, r >= 0x1f300 && r <= 0x1f64f, r >= 0x1f900 && r <= 0x1f9ff,
			r >= 0x20000 && r <= 0x3fffd:
			n += 2
		default:
			n++
		}
	}
	return n
}
