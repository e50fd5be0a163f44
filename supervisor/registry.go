package supervisor

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zlink-go/zlink/mailbox"
)

// RootPath is the path of the tree's root node, the actor system itself.
const RootPath = "/"

// Failure is the last failure recorded for an actor.
type Failure struct {
	Reason string    `json:"reason"`
	Stack  string    `json:"stack,omitempty"`
	At     time.Time `json:"at"`
}

// MailboxStats is an actor's mailbox load against its budgets (0 = unlimited).
type MailboxStats struct {
	Depth       int64 `json:"depth"`
	Bytes       int64 `json:"bytes"`
	MaxMessages int64 `json:"max_messages"`
	MaxBytes    int64 `json:"max_bytes"`
}

// Node is a copied snapshot of one actor and its subtree.
type Node struct {
	Path        string            `json:"path"`
	Parent      string            `json:"-"`
	Kind        string            `json:"kind"`
	State       State             `json:"state"`
	Restarts    int               `json:"restarts"`
	LastFailure *Failure          `json:"last_failure,omitempty"`
	Mailbox     MailboxStats      `json:"mailbox"`
	Hung        int               `json:"hung,omitempty"`
	Info        map[string]string `json:"info,omitempty"`
	Children    []Node            `json:"children"`
	// Folded is the number of children of a folded node (a Spot kind),
	// which a snapshot counts instead of listing.
	Folded int `json:"folded_children,omitempty"`
}

// Registry is the live supervision tree. It is safe for concurrent use and
// never blocks beyond its own short critical sections; it calls nothing
// outside itself while locked (the Quota reads are atomic loads).
type Registry struct {
	mu    sync.Mutex
	nodes map[string]*entry
	now   func() time.Time
}

type entry struct {
	path, parent, kind string
	state              State
	restarts           int
	last               *Failure
	q                  *mailbox.Quota
	hung               int
	info               map[string]string
	fold               bool   // snapshots count the children instead of listing them
	folded             int    // children counted without an entry (AddFoldedChild)
	up                 *entry // the node it hangs under
	children           map[string]*entry
}

// NewRegistry returns a registry holding only the root node "/".
func NewRegistry() *Registry {
	root := &entry{path: RootPath, kind: "system", state: Running, children: map[string]*entry{}}
	return &Registry{nodes: map[string]*entry{RootPath: root}, now: time.Now}
}

// Add registers an actor in state Starting under parent (RootPath or "" for
// top level; an unknown parent also attaches it to the root). q may be nil.
// It returns ErrDuplicatePath if path is taken (a Failed entry is replaced).
func (r *Registry) Add(path, parent, kind string, q *mailbox.Quota) error {
	return r.AddFolded(path, parent, kind, q, false)
}

// AddFolded is Add; a folded node's snapshot counts its children
// (Node.Folded) instead of listing them.
func (r *Registry) AddFolded(path, parent, kind string, q *mailbox.Quota, fold bool) error {
	if parent == "" {
		parent = RootPath
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.nodes[path]; ok {
		if old.state != Failed {
			return fmt.Errorf("%w: %s", ErrDuplicatePath, path)
		}
		r.removeLocked(old)
	}
	p, ok := r.nodes[parent]
	if !ok {
		p = r.nodes[RootPath]
	}
	e := &entry{path: path, parent: parent, kind: kind, state: Starting, q: q, fold: fold, up: p}
	r.nodes[path] = e
	if p.children == nil { // most actors (every Spot) never get a child
		p.children = map[string]*entry{}
	}
	p.children[path] = e
	return nil
}

// AddFoldedChild counts one child of the folded node parent that has no
// entry of its own (a Spot: a node may hold a million); RemoveFoldedChild
// uncounts it. Unknown parents are ignored.
func (r *Registry) AddFoldedChild(parent string) {
	r.mu.Lock()
	if e, ok := r.nodes[parent]; ok {
		e.folded++
	}
	r.mu.Unlock()
}

// RemoveFoldedChild uncounts a child added with AddFoldedChild.
func (r *Registry) RemoveFoldedChild(parent string) {
	r.mu.Lock()
	if e, ok := r.nodes[parent]; ok && e.folded > 0 {
		e.folded--
	}
	r.mu.Unlock()
}

// SetState records the actor's state. Unknown paths are ignored; Failed is
// terminal (later states are ignored).
func (r *Registry) SetState(path string, s State) {
	r.mu.Lock()
	if e, ok := r.nodes[path]; ok && e.state != Failed {
		e.state = s
	}
	r.mu.Unlock()
}

// Failed records reason as the actor's last failure. A *mailbox.Panic reason
// is shown as its value with its stack (used when stack is empty).
func (r *Registry) Failed(path string, reason any, stack string) {
	f := &Failure{At: r.now()}
	var p *mailbox.Panic
	if err, ok := reason.(error); ok && errors.As(err, &p) {
		f.Reason = fmt.Sprint(p.Value)
		if stack == "" {
			stack = string(p.Stack)
		}
	} else {
		f.Reason = fmt.Sprint(reason)
	}
	f.Stack = stack
	r.mu.Lock()
	if e, ok := r.nodes[path]; ok {
		e.last = f
	}
	r.mu.Unlock()
}

// Restarted counts one restart of the actor.
func (r *Registry) Restarted(path string) {
	r.mu.Lock()
	if e, ok := r.nodes[path]; ok {
		e.restarts++
	}
	r.mu.Unlock()
}

// SetHung records how many of the actor's handlers are considered hung.
func (r *Registry) SetHung(path string, n int) {
	r.mu.Lock()
	if e, ok := r.nodes[path]; ok {
		e.hung = n
	}
	r.mu.Unlock()
}

// SetInfo sets (or with an empty value deletes) a free-form key on the actor.
func (r *Registry) SetInfo(path, key, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.nodes[path]
	if !ok {
		return
	}
	if value == "" {
		delete(e.info, key)
		return
	}
	if e.info == nil {
		e.info = map[string]string{}
	}
	e.info[key] = value
}

// Remove drops the actor and anything still registered below it. The root
// cannot be removed.
func (r *Registry) Remove(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.nodes[path]
	if !ok || path == RootPath {
		return
	}
	r.removeLocked(e)
}

// Forget is Remove for an actor that ended, except that a Failed actor
// stays in the tree (its failure must stay visible).
func (r *Registry) Forget(path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.nodes[path]
	if !ok || path == RootPath || e.state == Failed {
		return
	}
	r.removeLocked(e)
}

func (r *Registry) removeLocked(e *entry) {
	delete(e.up.children, e.path)
	var drop func(*entry)
	drop = func(e *entry) {
		delete(r.nodes, e.path)
		for _, c := range e.children {
			drop(c)
		}
	}
	drop(e)
}

// Snapshot returns a deep copy of the whole tree rooted at "/".
func (r *Registry) Snapshot() Node {
	n, _ := r.Find(RootPath)
	return n
}

// Find returns a deep copy of the subtree at path.
func (r *Registry) Find(path string) (Node, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.nodes[path]
	if !ok {
		return Node{}, false
	}
	return e.snapshot(), true
}

func (e *entry) snapshot() Node {
	n := Node{
		Path: e.path, Parent: e.parent, Kind: e.kind, State: e.state,
		Restarts: e.restarts, Hung: e.hung, Children: make([]Node, 0, len(e.children)),
	}
	if e.path == RootPath {
		n.Parent = ""
	}
	if e.last != nil {
		f := *e.last
		n.LastFailure = &f
	}
	if e.info != nil {
		n.Info = maps.Clone(e.info)
	}
	if e.q != nil {
		st := e.q.Stats()
		n.Mailbox = MailboxStats{Depth: st.Depth, Bytes: st.Bytes, MaxMessages: st.MaxMessages, MaxBytes: st.MaxBytes}
	}
	if e.fold {
		n.Folded = len(e.children) + e.folded
		return n
	}
	for _, p := range slices.Sorted(maps.Keys(e.children)) {
		n.Children = append(n.Children, e.children[p].snapshot())
	}
	return n
}

// Format writes n's tree, one line per actor, indented two spaces per level:
//
//	path kind state restarts=N mailbox=depth/max_messages bytes=b/max_bytes
//
// An unlimited budget prints as "inf".
func Format(w io.Writer, n Node) error {
	var b strings.Builder
	format(&b, n, 0)
	_, err := io.WriteString(w, b.String())
	return err
}

// String returns the Format output of n.
func (n Node) String() string {
	var b strings.Builder
	format(&b, n, 0)
	return b.String()
}

func format(b *strings.Builder, n Node, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString(n.Path)
	b.WriteByte(' ')
	b.WriteString(n.Kind)
	b.WriteByte(' ')
	b.WriteString(n.State.String())
	b.WriteString(" restarts=")
	b.WriteString(strconv.Itoa(n.Restarts))
	b.WriteString(" mailbox=")
	b.WriteString(strconv.FormatInt(n.Mailbox.Depth, 10))
	b.WriteByte('/')
	b.WriteString(limit(n.Mailbox.MaxMessages))
	b.WriteString(" bytes=")
	b.WriteString(strconv.FormatInt(n.Mailbox.Bytes, 10))
	b.WriteByte('/')
	b.WriteString(limit(n.Mailbox.MaxBytes))
	if n.Folded > 0 {
		b.WriteString(" children=")
		b.WriteString(strconv.Itoa(n.Folded))
	}
	b.WriteByte('\n')
	for _, c := range n.Children {
		format(b, c, depth+1)
	}
}

func limit(v int64) string {
	if v <= 0 {
		return "inf"
	}
	return strconv.FormatInt(v, 10)
}
