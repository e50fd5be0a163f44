package actors

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/internal/pamailbox"
	"github.com/zlink-go/zlink/internal/pasupervisor"
	"github.com/zlink-go/zlink/mailbox"
	"github.com/zlink-go/zlink/supervisor"
)

// Config configures a System.
type Config struct {
	// Name names the system in logs (field "system"). Default "zlink".
	Name string
	// Logger receives the system's logs, including protoactor's slog output.
	// Default: zerolog.Nop().
	Logger zerolog.Logger
	// TopLevel is how top-level actors (Spec.Parent == nil) are supervised.
	// Past its restart intensity a top-level actor is stopped, since there
	// is no parent to escalate to. Default supervisor.DefaultConfig().
	TopLevel supervisor.Config
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{Name: "zlink", Logger: zerolog.Nop(), TopLevel: supervisor.DefaultConfig()}
}

func (c Config) validate() error {
	if c.Name == "" {
		return fmt.Errorf("%w: empty system name", ErrInvalidSpec)
	}
	return c.TopLevel.Validate()
}

// System is the actor system: a protoactor ActorSystem plus the live
// supervision registry. It is safe for concurrent use.
type System struct {
	as  *actor.ActorSystem
	reg *supervisor.Registry
	log zerolog.Logger
	top actor.SupervisorStrategy

	mu     sync.Mutex
	refs   map[string]*Ref // live actors by path
	closed bool

	// def is the strategy of every actor with a default supervisor Config,
	// shared (it holds no per-child state).
	def actor.SupervisorStrategy
	// pool runs the mailboxes of actors spawned with Spec.Pooled.
	pool *pool
}

// strategy returns the protoactor strategy for cfg (shared when default).
func (s *System) strategy(cfg supervisor.Config) actor.SupervisorStrategy {
	if cfg.IsDefault() {
		return s.def
	}
	return pasupervisor.Strategy(cfg, s.reg)
}

// NewSystem starts a System. It panics on an invalid Config (a programming
// error); a zero Name or zero TopLevel takes the default.
func NewSystem(cfg Config) *System {
	d := DefaultConfig()
	if cfg.Name == "" {
		cfg.Name = d.Name
	}
	if err := cfg.validate(); err != nil {
		panic(err)
	}
	log := cfg.Logger.With().Str("system", cfg.Name).Logger()
	s := &System{
		reg:  supervisor.NewRegistry(),
		log:  log,
		refs: map[string]*Ref{},
		pool: newPool(poolConfig{}),
	}
	s.top = pasupervisor.RootStrategy(cfg.TopLevel, s.reg)
	s.def = pasupervisor.Strategy(supervisor.DefaultConfig(), s.reg)
	plog := log.With().Str("lib", "protoactor").Logger()
	s.as = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(zerolog.NewSlogHandler(plog))
	}))
	return s
}

// Registry returns the live supervision tree.
func (s *System) Registry() *supervisor.Registry { return s.reg }

// Spec describes an actor to spawn.
type Spec struct {
	// Name is unique among the parent's children; no "/". Required.
	Name string
	// Kind labels the actor in the tree (e.g. "peer"). Default Name.
	Kind string
	// Parent is the supervising actor; nil spawns at top level.
	Parent *Ref
	// MaxMessages is the mailbox message budget; 0 = unlimited.
	MaxMessages int64
	// MaxBytes is the mailbox byte budget; 0 = unlimited.
	MaxBytes int64
	// Supervisor is how this actor supervises ITS children.
	Supervisor supervisor.Config
	// Producer makes a fresh actor instance, at start and on every restart.
	// Required.
	Producer func() Actor
	// Compact gives the actor an unpadded mailbox quota: for actors that
	// are many and rarely contended (Spots).
	Compact bool
	// Fold shows this actor's children in tree snapshots as a count
	// instead of one node each (a Spot kind may hold a million).
	Fold bool
	// Pooled runs the actor's mailbox on the System's worker Pool instead
	// of a new goroutine per schedule: for actors scheduled very often
	// with short turns (Spots running timer firings).
	Pooled bool
}

func (sp Spec) validate() error {
	switch {
	case sp.Name == "" || strings.Contains(sp.Name, "/"):
		return fmt.Errorf("%w: bad name %q", ErrInvalidSpec, sp.Name)
	case sp.Producer == nil:
		return fmt.Errorf("%w: %s: nil producer", ErrInvalidSpec, sp.Name)
	}
	if err := sp.Supervisor.Validate(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidSpec, sp.Name, err)
	}
	return nil
}

// Spawn starts an actor. With a Parent it is spawned by the parent actor
// itself (so supervision and escalation follow the tree); Spawn then waits
// until the parent has handled the request, and fails with ErrStopped if the
// parent stops first.
func (s *System) Spawn(spec Spec) (*Ref, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if spec.Parent == nil {
		return s.spawn(nil, "", spec)
	}
	p := spec.Parent
	req := &spawnRequest{spec: spec, reply: make(chan spawnResult, 1)}
	p.life.mu.RLock()
	if p.life.closed || p.life.dead.Load() {
		p.life.mu.RUnlock()
		return nil, ErrStopped
	}
	s.as.Root.Send(p.pid, req)
	p.life.mu.RUnlock()
	select {
	case res := <-req.reply:
		return res.ref, res.err
	case <-p.life.doneCh():
		select {
		case res := <-req.reply:
			return res.ref, res.err
		default:
			return nil, ErrStopped
		}
	}
}

// SpawnChild starts an actor as a child of the actor owning c. Call it only
// from inside that actor's Receive. spec.Parent is ignored.
//
// Deprecated: use c.Spawn(spec).
func (s *System) SpawnChild(c *Context, spec Spec) (*Ref, error) {
	return c.Spawn(spec)
}

type spawnRequest struct {
	spec  Spec
	reply chan spawnResult
}

type spawnResult struct {
	ref *Ref
	err error
}

// spawn starts spec under parent (nil = top level, guardian-supervised).
func (s *System) spawn(parent actor.Context, parentPath string, spec Spec) (*Ref, error) {
	path := parentPath + "/" + spec.Name
	kind := cmp.Or(spec.Kind, spec.Name)
	var q *mailbox.Quota
	if spec.Compact {
		q = mailbox.NewCompactQuota(spec.MaxMessages, spec.MaxBytes)
	} else {
		q = mailbox.NewQuota(spec.MaxMessages, spec.MaxBytes)
	}
	mb := pamailbox.New(q)
	ref := &Ref{sys: s, path: path, q: q, mb: mb, life: newLifecycle()}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrStopped
	}
	ref.fold = spec.Fold
	if p := s.refs[parentPath]; p != nil && p.fold {
		// A child of a folded actor: counted on its parent, no tree entry.
		if s.refs[path] != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: %s", ErrNameTaken, path)
		}
		ref.folded = true
		s.reg.AddFoldedChild(parentPath)
	} else if err := s.reg.AddFolded(path, cmp.Or(parentPath, supervisor.RootPath), kind, q, spec.Fold); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrNameTaken, path)
	}
	s.refs[path] = ref
	s.mu.Unlock()

	opts := []actor.PropsOption{
		actor.WithMailbox(mb.Producer()),
		actor.WithSupervisor(s.strategy(spec.Supervisor)),
	}
	if parent == nil {
		opts = append(opts, actor.WithGuardian(s.top))
	}
	if spec.Pooled {
		opts = append(opts, actor.WithDispatcher(s.pool))
	}
	producer := spec.Producer
	props := actor.PropsFromProducer(func() actor.Actor {
		return newCell(ref, producer())
	}, opts...)

	var pid *actor.PID
	var err error
	if parent == nil {
		pid, err = s.as.Root.SpawnNamed(props, spec.Name)
	} else {
		pid, err = parent.SpawnNamed(props, spec.Name)
	}
	if err != nil {
		s.forget(ref)
		if err == actor.ErrNameExists {
			return nil, fmt.Errorf("%w: %s", ErrNameTaken, path)
		}
		return nil, err
	}
	s.mu.Lock()
	ref.pid = pid // under mu: Shutdown reads it from its snapshot
	s.mu.Unlock()
	return ref, nil
}

func (s *System) forget(r *Ref) {
	s.mu.Lock()
	if s.refs[r.path] == r {
		delete(s.refs, r.path)
		if r.folded {
			s.reg.RemoveFoldedChild(r.path[:strings.LastIndexByte(r.path, '/')])
		} else {
			s.reg.Forget(r.path)
		}
	}
	s.mu.Unlock()
}

// Shutdown stops every actor gracefully, deepest first (each drains what it
// admitted), then stops the protoactor system. Spawn fails with ErrStopped
// from the moment Shutdown is called. If ctx ends first, Shutdown still
// stops the protoactor system and returns the context's error.
func (s *System) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	defer s.pool.Close() // after the protoactor system stopped
	defer s.as.Shutdown()

	for {
		s.mu.Lock()
		if len(s.refs) == 0 {
			s.mu.Unlock()
			return nil
		}
		// Stop the deepest level still alive, then look again: children
		// spawned meanwhile by a stopping parent are caught on the next pass.
		refs := make([]*Ref, 0, len(s.refs))
		for _, r := range s.refs {
			if r.pid != nil {
				refs = append(refs, r)
			}
		}
		s.mu.Unlock()
		if len(refs) == 0 {
			// Only spawns still in flight; they finish without blocking.
			if err := ctx.Err(); err != nil {
				return ctxErr(err)
			}
			runtime.Gosched()
			continue
		}
		depth := func(r *Ref) int { return strings.Count(r.path, "/") }
		maxDepth := depth(slices.MaxFunc(refs, func(a, b *Ref) int { return depth(a) - depth(b) }))
		var level []*Ref
		for _, r := range refs {
			if depth(r) == maxDepth {
				level = append(level, r)
				r.poison()
			}
		}
		for _, r := range level {
			if err := r.wait(ctx); err != nil {
				return err
			}
		}
	}
}
