package handshake

import (
	"fmt"
	"strconv"
	"time"

	"github.com/zlink-go/zlink/routemesh/internal/admission"
)

// Machine runs the handshake of one pipe, on the dialer or the listener
// side. It is owned by one goroutine (the MeshNode actor) together with the
// admission machine it consults, and is not safe for concurrent use.
type Machine struct {
	adm      *admission.Machine
	local    admission.Identity
	pipe     admission.Pipe
	remote   admission.Identity
	state    State
	deadline time.Time
	authOK   bool // the peer's proof verified
	arbiter  bool // valid once the remote identity is known
}

// New returns the machine of pipe p, created at now: a dialer machine when
// p.Outbound (it starts with the Dialed event), a listener machine otherwise
// (it starts with HelloReceived). adm is the node's admission machine; it
// must outlive the pipe. New panics with an error wrapping ErrInvalidConfig
// when cfg.Timeout is not positive, and when adm is nil.
func New(cfg Config, adm *admission.Machine, p admission.Pipe, now time.Time) *Machine {
	if cfg.Timeout <= 0 {
		panic(fmt.Errorf("%w: Timeout %v must be positive", ErrInvalidConfig, cfg.Timeout))
	}
	if adm == nil {
		panic(fmt.Errorf("%w: nil admission machine", ErrInvalidConfig))
	}
	st := AwaitHello
	if p.Outbound {
		st = AwaitDial
	}
	return &Machine{adm: adm, local: adm.Local(), pipe: p, state: st, deadline: now.Add(cfg.Timeout)}
}

// State returns where the handshake is.
func (m *Machine) State() State { return m.state }

// Remote returns the identity the peer stated; zero before its Hello or
// Welcome.
func (m *Machine) Remote() admission.Identity { return m.remote }

// Arbiter reports whether the local node arbitrates this pipe (its RID is
// the smaller one). Meaningful once the remote identity is known.
func (m *Machine) Arbiter() bool { return m.arbiter }

// Step applies ev at now and returns what the driver must do. Once the
// machine is Ready or Closed every later event returns the zero Output: a
// ready pipe's frames belong to the driver, a closed pipe's are late.
func (m *Machine) Step(now time.Time, ev Event) Output {
	if m.state == Ready || m.state == Closed {
		return Output{}
	}
	if ev.Kind == Tick {
		if !now.Before(m.deadline) {
			detail := "handshake timed out in state " + m.state.String()
			m.state = Closed
			return Output{Close: true, Reason: Timeout, Detail: detail}
		}
		return m.wait()
	}
	if ev.Kind == RejectReceived {
		m.state = Closed
		return Output{Close: true, ByPeer: true, Reason: ev.Reason, Detail: ev.Detail}
	}
	if ev.Kind == Malformed {
		return m.refuse(Protocol, ev.Detail)
	}
	switch {
	case m.state == AwaitDial && ev.Kind == Dialed:
		m.state = HelloSent
		return m.send(FrameHello)
	case m.state == AwaitHello && ev.Kind == HelloReceived:
		return m.onHello(ev)
	case m.state == HelloSent && ev.Kind == WelcomeReceived:
		return m.onWelcome(ev)
	case m.state == WelcomeSent && ev.Kind == AuthReceived:
		return m.onAuth(ev)
	case (m.state == AuthSent || m.state == AckSent) && ev.Kind == BatchReceived:
		return m.onFirstBatch()
	default:
		return m.refuse(Protocol, "unexpected "+ev.Kind.String()+" in state "+m.state.String())
	}
}

// onHello (listener): the checks that need no proof, then the Welcome.
func (m *Machine) onHello(ev Event) Output {
	m.learn(ev.Remote)
	switch {
	case ev.Remote.Mesh != m.local.Mesh:
		return m.refuse(WrongMesh, "mesh "+ev.Remote.Mesh)
	case ev.Remote.Protocol != m.local.Protocol:
		return m.refuse(Version, "protocol "+strconv.Itoa(int(ev.Remote.Protocol)))
	case ev.ExpectRID != "" && ev.ExpectRID != m.local.RID:
		return m.refuse(WrongRID, "this node is "+m.local.RID)
	}
	m.state = WelcomeSent
	return m.send(FrameWelcome)
}

// onWelcome (dialer): the listener is known and proved; check admission
// before proving ourselves.
func (m *Machine) onWelcome(ev Event) Output {
	m.learn(ev.Remote)
	m.authOK = ev.ProofOK
	if out, ok := m.apply(m.adm.Check(m.pipe, m.remote, m.authOK)); !ok {
		return out
	}
	m.state = AuthSent
	return m.send(FrameAuth)
}

// onAuth (listener): both sides are authenticated. The arbiter admits and
// declares ready; the follower acknowledges and waits for the arbiter.
func (m *Machine) onAuth(ev Event) Output {
	m.authOK = ev.ProofOK
	if m.arbiter {
		return m.ready()
	}
	if out, ok := m.apply(m.adm.Check(m.pipe, m.remote, m.authOK)); !ok {
		return out
	}
	m.state = AckSent
	return m.send(FrameBatch)
}

// onFirstBatch: on the dialer it acknowledges the Auth (and, from an
// arbiter listener, declares ready); on a follower listener it is the
// arbiter's ready.
func (m *Machine) onFirstBatch() Output { return m.ready() }

// ready admits the pipe and makes it ready. The arbiter announces it with a
// first Batch (its ready signal, which the follower waits for); the follower
// sends nothing, the arbiter is ready already.
func (m *Machine) ready() Output {
	d := m.adm.Admit(m.pipe, m.remote, m.authOK)
	out, ok := m.apply(d)
	if !ok {
		return out
	}
	m.state = Ready
	out = Output{Ready: true}
	if d.Verdict == admission.Replace {
		out.Replace = d.Close
	}
	if m.arbiter {
		out.Send = FrameBatch
	}
	return out
}

// apply turns a refusing admission decision into a Reject; ok is true for
// Accept and Replace.
func (m *Machine) apply(d admission.Decision) (Output, bool) {
	switch d.Verdict {
	case admission.Accept, admission.Replace:
		return Output{}, true
	case admission.NotRequired:
		return m.refuse(NotRequired, "both Object Clients without Channel Server membership"), false
	case admission.Duplicate:
		return m.refuse(Duplicate, "a connection to this peer already exists"), false
	case admission.Defer:
		return m.refuse(StaleGeneration, "the previous generation's connection is still alive"), false
	default:
		return m.refuse(reasonOf(d.Reason), d.Reason.String()), false
	}
}

func reasonOf(r admission.Reason) Reason {
	switch r {
	case admission.OldGenerationAlive:
		return StaleGeneration // on the wire: the old lifecycle still holds its place
	case 0:
		return Protocol
	}
	return r
}

func (m *Machine) learn(remote admission.Identity) {
	m.remote = remote
	m.arbiter = admission.Arbiter(m.local.RID, remote.RID)
}

// refuse closes the pipe with a Reject.
func (m *Machine) refuse(r Reason, detail string) Output {
	m.state = Closed
	return Output{Send: FrameReject, Reason: r, Detail: detail, Close: true}
}

func (m *Machine) send(f Frame) Output {
	out := m.wait()
	out.Send = f
	return out
}

func (m *Machine) wait() Output { return Output{Deadline: m.deadline} }
