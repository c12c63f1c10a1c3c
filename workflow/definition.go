package workflow

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/custodian-run/custodian/internal/names"
)

// DefaultRepairScope is what the agent orchestrator may do at a block that
// permits a repair, unless a definition says otherwise.
const DefaultRepairScope = "repair conditions (the environment, a missing input, a misnamed file); " +
	"do not write or edit the content of a job's output, and do not change anything under .custodian/"

// Limits bound how often code retries a job and how often the agent
// orchestrator may repair.
type Limits struct {
	// Retries is how many times a refused or missing output is handed out
	// again before the job blocks: a cycle has Retries+1 attempts.
	Retries int
	// Repairs is how many blocks of one subject in a row permit a repair;
	// the next permits only stopping. Zero means every block stops.
	Repairs int
	// MaxOutput is the largest output, in bytes, that is read and judged;
	// a larger one is refused without being read. Zero means
	// DefaultMaxOutput. A job can set its own (Job.MaxOutput).
	MaxOutput int64
}

// DefaultMaxOutput is large enough for real documents, and small enough
// that a runaway worker's output is refused rather than read at every step.
const DefaultMaxOutput = 32 << 20

// DefaultLimits: one retry (two attempts a cycle), one repair, and outputs
// of up to DefaultMaxOutput bytes.
var DefaultLimits = Limits{Retries: 1, Repairs: 1, MaxOutput: DefaultMaxOutput}

// Params are a run's parameters, given when it starts and kept in run.json.
type Params map[string]string

// Get returns the parameter key, or def when the run has none.
func (p Params) Get(key, def string) string {
	if v, ok := p[key]; ok {
		return v
	}
	return def
}

// String renders the parameters as sorted KEY=VALUE pairs, or says that
// there are none.
func (p Params) String() string {
	if len(p) == 0 {
		return "no parameters"
	}
	keys := slices.Sorted(maps.Keys(p))
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = k + "=" + p[k]
	}
	return strings.Join(pairs, " ")
}

// Definition is a workflow: an ordinary Go function that names jobs, waits on
// them, and runs mechanical steps. It is replayed from the top at every step;
// see the package documentation for the rules that replay imposes.
type Definition struct {
	// Name is the registry key a run records. A plain lower-case identifier.
	Name string
	// Doc says what the workflow does; its first line is listed by
	// `custodian definitions`.
	Doc string
	// Limits returns the limits of a run with the given parameters. Nil means
	// DefaultLimits for every run.
	Limits func(Params) Limits
	// RepairScope is what the agent orchestrator may do to repair a block.
	// Empty means DefaultRepairScope.
	RepairScope string
	// Params declares the parameters a run is started with. start refuses
	// any other, an invalid one, and a run without a required one.
	Params []Param
	// Patches name the changes of the definition that a run started before
	// them must not take: a run records the patches its definition declared
	// when it started, and Context.Patched says whether it has one. Keep a
	// patch while a run without it is live.
	Patches []string
	// Run is the workflow. A returned error blocks on workflow; an error
	// made by Stopf stops the run.
	Run func(ctx *Context) error
}

// Registry maps definition names to definitions. A binary builds one from
// the definitions it carries and hands it to the shell.
type Registry struct {
	defs map[string]*Definition
}

// NewRegistry returns a registry of defs. It fails when a definition has no
// Run, a bad name, or a name another one has.
func NewRegistry(defs ...*Definition) (*Registry, error) {
	r := &Registry{defs: map[string]*Definition{}}
	for _, d := range defs {
		if err := r.Register(d); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds d to the registry.
func (r *Registry) Register(d *Definition) error {
	switch {
	case d == nil || d.Run == nil:
		return fmt.Errorf("register definition: it has no Run function: %w", ErrDefinition)
	case names.Problem("definition", d.Name) != "":
		return fmt.Errorf("register definition: %s: %w", names.Problem("definition", d.Name), ErrDefinition)
	case r.defs[d.Name] != nil:
		return fmt.Errorf("register definition %s: the name is taken: %w", d.Name, ErrDefinition)
	}
	if err := d.checkDeclarations(); err != nil {
		return err
	}
	r.defs[d.Name] = d
	return nil
}

// Lookup returns the definition registered as name.
func (r *Registry) Lookup(name string) (*Definition, error) {
	if d := r.defs[name]; d != nil {
		return d, nil
	}
	return nil, fmt.Errorf("definition %q: %w", name, ErrUnknownDefinition)
}

// Definitions returns every registered definition, sorted by name.
func (r *Registry) Definitions() []*Definition {
	out := make([]*Definition, 0, len(r.defs))
	for _, d := range r.defs {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
