package actors

// Reservation is one admitted message slot in an actor's mailbox, taken
// before the work whose answer will fill it (an asynchronous request's
// reply): the answer then always has room, so it is never refused and
// never dropped while the actor runs. A reservation counts against the
// message budget only (its bytes are not known in advance).
type Reservation struct {
	r *Ref
}

// Reserve admits one message slot now. It fails like Tell: with a
// *mailbox.FullError when the message budget is spent, with ErrStopped
// when the actor is stopping or gone.
func (r *Ref) Reserve() (Reservation, error) {
	r.life.mu.RLock()
	defer r.life.mu.RUnlock()
	if r.life.closed || r.life.dead.Load() {
		return Reservation{}, ErrStopped
	}
	if err := r.q.Admit(0); err != nil {
		return Reservation{}, err
	}
	return Reservation{r: r}, nil
}

// Post delivers msg into the reserved slot. Call it exactly once per
// reservation. An actor that stopped meanwhile no longer takes it (the
// slot went with its mailbox).
func (v Reservation) Post(msg any) {
	r := v.r
	if r == nil {
		return
	}
	r.life.mu.RLock()
	defer r.life.mu.RUnlock()
	if r.life.dead.Load() {
		return
	}
	r.mb.PostSized(msg, 0)
}

// ReplyTo is where asynchronous answers go: the mailbox of one actor.
// It carries no way to send anything else: a call that answers later
// (routemesh's CallAsync) reserves a slot with Reserve and posts its one
// answer there. An actor gets its own with c.ReplyTo(); Ref.ReplyTo is for
// code that starts calls on an actor's behalf outside its Receive. The
// zero ReplyTo reserves nothing (ErrStopped).
type ReplyTo struct{ r *Ref }

// ReplyTo returns where asynchronous answers to r's actor go.
func (r *Ref) ReplyTo() ReplyTo { return ReplyTo{r: r} }

// Reserve admits one message slot in the actor's mailbox now; see
// Ref.Reserve.
func (t ReplyTo) Reserve() (Reservation, error) {
	if t.r == nil {
		return Reservation{}, ErrStopped
	}
	return t.r.Reserve()
}
