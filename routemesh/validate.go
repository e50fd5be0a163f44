package routemesh

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/location"
)

// TopologyKind names a physical send path a ChannelName can be registered on.
type TopologyKind uint8

const (
	// TopologyRouteMesh is a RouteMesh channel.
	TopologyRouteMesh TopologyKind = 1 + iota
	// TopologyFanout is a classic fanout (PUB/SUB) registration.
	TopologyFanout
)

// String names the topology.
func (k TopologyKind) String() string {
	switch k {
	case TopologyRouteMesh:
		return "RouteMesh"
	case TopologyFanout:
		return "fanout"
	default:
		return "invalid"
	}
}

// FanoutReg is one classic fanout registration. A subscriber takes its
// publishers either from the Location Store (Automatic) or from Endpoints
// (manual), never both.
type FanoutReg struct {
	Channel   string
	Publisher bool
	Automatic bool
	Endpoints []string
}

// Topology is every registration of one process, checked as a whole at Start.
type Topology struct {
	Meshes  []*Config
	Fanouts []FanoutReg
	// HasLocationStore is true when a Location Store was configured
	// explicitly (Redis, or the in-memory store for one process).
	HasLocationStore bool
}

// Validate applies every registration and startup check: each MeshNode's
// settings, one physical topology per ChannelName, and the fanout rules
// (fanout.CheckChannel, fanout.CheckSubscriberSource). It returns the first
// refusal as a *ConfigError naming the mesh and channel.
func (t *Topology) Validate() error {
	seenMesh := map[string]bool{}
	// owner records the first physical topology of each ChannelName.
	type owner struct {
		kind TopologyKind
		mesh string
	}
	owners := map[string]owner{}
	claim := func(ch string, o owner) error {
		prev, ok := owners[ch]
		if !ok {
			owners[ch] = o
			return nil
		}
		if prev.kind == o.kind && prev.kind != TopologyRouteMesh && prev.mesh == o.mesh {
			return nil // fanout keeps its own duplicate rules
		}
		detail := fmt.Sprintf("already registered on %s", prev.kind)
		if prev.mesh != "" {
			detail += " mesh " + prev.mesh
		}
		if prev.kind == TopologyRouteMesh && o.kind == TopologyRouteMesh && prev.mesh == o.mesh {
			return &ConfigError{Mesh: o.mesh, Channel: ch, Err: ErrDuplicateChannel, Detail: "one role per ChannelName"}
		}
		return &ConfigError{Mesh: o.mesh, Channel: ch, Err: ErrTopologyConflict, Detail: detail}
	}

	for _, m := range t.Meshes {
		if err := m.validate(t.HasLocationStore); err != nil {
			return err
		}
		if seenMesh[m.Mesh] {
			return &ConfigError{Mesh: m.Mesh, Err: ErrDuplicateMesh}
		}
		seenMesh[m.Mesh] = true
		for _, ch := range m.channels {
			if err := claim(ch.name, owner{kind: TopologyRouteMesh, mesh: m.Mesh}); err != nil {
				return err
			}
		}
	}
	for _, f := range t.Fanouts {
		if err := f.validate(t.HasLocationStore); err != nil {
			return err
		}
		if err := claim(f.Channel, owner{kind: TopologyFanout}); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one fanout registration with fanout's own rules (the
// same checks fanout.StartPublisher and fanout.StartSubscriber apply), so
// errors.Is matches the same sentinel from both entry points.
func (f FanoutReg) validate(hasStore bool) error {
	if err := fanout.CheckChannel(f.Channel); err != nil {
		return &ConfigError{Channel: f.Channel, Err: err, Detail: "fanout registration"}
	}
	if err := location.CheckName("fanout channel", f.Channel); err != nil {
		return &ConfigError{Channel: f.Channel, Err: ErrInvalid, Detail: "fanout registration: " + err.Error()}
	}
	if f.Publisher {
		// A publisher is automatic exactly when it has a store.
		if f.Automatic && !hasStore {
			return &ConfigError{Channel: f.Channel, Err: ErrNeedsLocationStore, Detail: "automatic fanout publisher"}
		}
		return nil
	}
	if err := fanout.CheckSubscriberSource(f.Automatic, f.Endpoints, hasStore); err != nil {
		return &ConfigError{Channel: f.Channel, Err: err, Detail: "fanout subscriber"}
	}
	return nil
}

// validate checks one MeshNode's own settings: what a builder method
// refused, then every rule about this node alone. hasStore tells whether a
// Location Store is configured explicitly.
func (c *Config) validate(hasStore bool) error {
	if c == nil {
		return &ConfigError{Err: ErrInvalid, Detail: "no configuration"}
	}
	if c.buildErr != nil {
		return c.buildErr
	}
	if c.Mesh == "" {
		return c.bad(ErrInvalid, "empty MeshName")
	}
	if err := c.validateNames(); err != nil {
		// The detail quotes the name (clipped): the mesh= part too.
		detail := strings.TrimPrefix(err.Error(), location.ErrInvalid.Error()+": ")
		return &ConfigError{Mesh: strings.Trim(fmt.Sprintf("%.64q", c.Mesh), `"`), Err: ErrInvalid, Detail: detail}
	}
	if err := c.validateTopology(hasStore); err != nil {
		return err
	}
	if err := c.validateEndpoints(); err != nil {
		return err
	}
	if err := c.validateNumbers(); err != nil {
		return c.bad(ErrInvalid, err.Error())
	}
	if _, _, err := c.security(); err != nil {
		return err
	}
	for _, ch := range c.channels {
		if ch.name == "" {
			return c.bad(ErrInvalid, "empty ChannelName")
		}
		if ch.role == RoleServer {
			if err := CheckWeight(ch.weight); err != nil {
				return &ConfigError{Mesh: c.Mesh, Channel: ch.name, Err: ErrWeightRange, Detail: fmt.Sprintf("weight %d", ch.weight)}
			}
		}
	}
	return nil
}

// bad is a refusal of this MeshNode's configuration.
func (c *Config) bad(err error, detail string) error {
	return &ConfigError{Mesh: c.Mesh, Err: err, Detail: detail}
}

// validateTopology checks how the node finds its peers and its object
// role against what it has (a store, manual peers, Node-direct handlers).
func (c *Config) validateTopology(hasStore bool) error {
	switch {
	case c.RID != "" && c.RIDPrefix != "":
		return c.bad(ErrRIDConflict, "SetRoutingID is for manual topology only")
	case c.Automatic() && !hasStore:
		return c.bad(ErrNeedsLocationStore, "SetRoutingIDPrefix needs a Location Store configured explicitly")
	case c.Automatic() && len(c.Peers) > 0:
		return c.bad(ErrInvalid, "manual peers on an automatic MeshNode")
	case c.ObjectRole < ObjectNone || c.ObjectRole > ObjectServer:
		return c.bad(ErrInvalid, "object role")
	case c.ObjectRole != ObjectNone && !hasStore:
		return c.bad(ErrNeedsLocationStore, "an object role needs a Location Store configured explicitly")
	case c.ObjectRole == ObjectClient && c.directRegs > 0:
		return c.bad(ErrDirectOnObjectRole, "an Object Client takes no application Node-direct handler")
	}
	return nil
}

// validateEndpoints checks the listen endpoint, the advertised host, the
// manual peers and the RID's characters.
func (c *Config) validateEndpoints() error {
	if err := validEndpoint(c.Listen, true); err != nil {
		return c.bad(ErrInvalid, "listen endpoint: "+err.Error())
	}
	if c.AdvertiseHost != "" {
		if err := validAdvertiseHost(c.AdvertiseHost); err != nil {
			return c.bad(ErrInvalid, "advertise host: "+err.Error())
		}
	}
	for _, p := range c.Peers {
		if err := validEndpoint(p.Endpoint, false); err != nil {
			return c.bad(ErrInvalid, "peer endpoint: "+err.Error())
		}
		if strings.ContainsAny(p.ExpectRID, " \t\n/") {
			return c.bad(ErrInvalid, "expected peer RID must not contain spaces or '/'")
		}
	}
	if strings.ContainsAny(c.RID, " \t\n/") || strings.ContainsAny(c.RIDPrefix, " \t\n/") {
		return c.bad(ErrInvalid, "RID must not contain spaces or '/'")
	}
	return nil
}

// Limit is the documented range of one numeric setting of a Config:
// Start refuses a value outside Min..Max (inclusive) with a *ConfigError
// (ErrInvalid) that names the setting and the range, before anything is
// allocated for it.
type Limit struct {
	// Setting is the Config field, e.g. "HandlerConcurrency" or
	// "Socket.SendHWM"; a channel's setting is "Channel.Concurrency".
	Setting string
	// Min and Max bound the value; a duration's in nanoseconds.
	Min, Max int64
	// Duration says the value is a time.Duration.
	Duration bool
}

// Range formats Min..Max in the setting's unit.
func (l Limit) Range() string {
	if l.Duration {
		return time.Duration(l.Min).String() + ".." + time.Duration(l.Max).String()
	}
	return strconv.FormatInt(l.Min, 10) + ".." + strconv.FormatInt(l.Max, 10)
}

// check refuses v outside the range.
func (l Limit) check(v int64) error {
	if v >= l.Min && v <= l.Max {
		return nil
	}
	shown := strconv.FormatInt(v, 10)
	if l.Duration {
		shown = time.Duration(v).String()
	}
	return fmt.Errorf("%s %s out of range %s", l.Setting, shown, l.Range())
}

// MaxHandlerConcurrency is the largest HandlerConcurrency (and channel
// concurrency): each owner's handler pool holds a queue of that many
// messages.
const MaxHandlerConcurrency = 1 << 16

var limits = []Limit{
	{Setting: "Socket.SendHWM", Min: 1, Max: 1_000_000},
	{Setting: "Socket.ReceiveHWM", Min: 1, Max: 1_000_000},
	{Setting: "Socket.MailboxMessageBudget", Min: 1, Max: 100_000_000},
	{Setting: "Socket.MailboxByteBudget", Min: 1, Max: 1 << 30},
	{Setting: "Socket.SendTimeout", Min: 0, Max: int64(10 * time.Minute), Duration: true},
	{Setting: "Socket.ReceiveTimeout", Min: int64(time.Millisecond), Max: int64(10 * time.Minute), Duration: true},
	{Setting: "Liveness.Interval", Min: int64(time.Millisecond), Max: int64(time.Minute), Duration: true},
	{Setting: "Liveness.MaxGap", Min: 1, Max: 1 << 20},
	{Setting: "Liveness.LastHeard", Min: int64(time.Millisecond), Max: int64(time.Hour), Duration: true},
	{Setting: "DrainTimeout", Min: int64(time.Millisecond), Max: int64(24 * time.Hour), Duration: true},
	{Setting: "ShutdownTimeout", Min: int64(time.Millisecond), Max: int64(24 * time.Hour), Duration: true},
	{Setting: "DescriptorTTL", Min: int64(10 * time.Millisecond), Max: int64(time.Hour), Duration: true},
	{Setting: "DiscoveryPoll", Min: int64(time.Millisecond), Max: int64(time.Hour), Duration: true},
	{Setting: "InboundGrace", Min: int64(time.Millisecond), Max: int64(time.Hour), Duration: true},
	{Setting: "HandlerConcurrency", Min: 1, Max: MaxHandlerConcurrency},
	{Setting: "HungThreshold", Min: 0, Max: 1_000_000},
	{Setting: "HungCheckInterval", Min: int64(time.Millisecond), Max: int64(time.Hour), Duration: true},
	{Setting: "PlacementWeight", Min: 0, Max: math.MaxUint32},
	{Setting: "Channel.Concurrency", Min: 0, Max: MaxHandlerConcurrency},
	{Setting: "Channel.Weight", Min: MinWeight, Max: MaxWeight},
}

// Limits returns the range of every numeric setting of a Config (besides
// ConfigGeneration: any value from 1, and SelectionSeed: any value).
func Limits() []Limit { return append([]Limit(nil), limits...) }

// limitOf returns the Limit of setting (one of limits).
func limitOf(setting string) Limit {
	for _, l := range limits {
		if l.Setting == setting {
			return l
		}
	}
	panic("routemesh: no limit for " + setting)
}

// values returns each numeric setting of c with its Limit's name, in the
// order of limits (channel settings apart).
func (c *Config) values() []int64 {
	s, l := c.Socket, c.Liveness
	return []int64{int64(s.SendHWM), int64(s.ReceiveHWM), s.MailboxMessageBudget, s.MailboxByteBudget,
		int64(s.SendTimeout), int64(s.ReceiveTimeout), int64(l.Interval), int64(l.MaxGap), int64(l.LastHeard),
		int64(c.DrainTimeout), int64(c.ShutdownTimeout), int64(c.DescriptorTTL), int64(c.DiscoveryPoll),
		int64(c.InboundGrace), int64(c.HandlerConcurrency), int64(c.HungThreshold), int64(c.HungCheckInterval),
		int64(c.PlacementWeight)}
}

// ridSuffixLen is what an automatic node adds to its RIDPrefix ("-" and
// 12 hex digits).
const ridSuffixLen = 13

// validateNames refuses names the Location Store or the wire would
// refuse later, so a node that starts can always be discovered: the
// MeshName, RID, RID prefix, expected peer RIDs and ChannelNames within
// location.MaxNameLen bytes, a MeshName without '{' or '}' (nor ':' with
// Spots), at most location.MaxServers Server channels. The rules hold
// with or without a store: the same configuration may meet one later.
func (c *Config) validateNames() error {
	if err := location.CheckMeshName(c.Mesh, c.ObjectRole == ObjectClient || c.ObjectRole == ObjectServer); err != nil {
		return err
	}
	if c.RID != "" {
		if err := location.CheckName("RID", c.RID); err != nil {
			return err
		}
	}
	if len(c.RIDPrefix) > location.MaxNameLen-ridSuffixLen {
		return fmt.Errorf("RID prefix %.64q: want at most %d bytes (the RID adds %d)", c.RIDPrefix,
			location.MaxNameLen-ridSuffixLen, ridSuffixLen)
	}
	for _, p := range c.Peers {
		if p.ExpectRID != "" {
			if err := location.CheckName("expected peer RID", p.ExpectRID); err != nil {
				return err
			}
		}
	}
	servers := 0
	for _, ch := range c.channels {
		if ch.name == "" {
			continue // refused below with its own message
		}
		if err := location.CheckName("ChannelName", ch.name); err != nil {
			return err
		}
		if ch.role == RoleServer {
			servers++
		}
	}
	if servers > location.MaxServers {
		return fmt.Errorf("%d Server channels, more than %d", servers, location.MaxServers)
	}
	return nil
}

// validateNumbers refuses sizes, counts and durations outside their
// documented ranges (Limits) and the combinations the runtime cannot use.
func (c *Config) validateNumbers() error {
	for i, v := range c.values() {
		if err := limits[i].check(v); err != nil {
			return err
		}
	}
	s, l := c.Socket, c.Liveness
	switch {
	case l.LastHeard <= l.Interval:
		return fmt.Errorf("liveness last-heard %v must exceed the heartbeat interval %v (every peer would be lost between heartbeats)", l.LastHeard, l.Interval)
	case s.SendTimeout > 0 && s.SendTimeout >= l.sendTimeoutMargin():
		return fmt.Errorf("send timeout %v must stay below %v, the liveness silence limit %v less one heartbeat interval: "+
			"while a write to a peer that stopped reading waits it out, the heartbeats to every other peer wait too, and they would lose this node",
			s.SendTimeout, l.sendTimeoutMargin(), l.silence())
	case c.ConfigGeneration == 0:
		return fmt.Errorf("configuration generation 0")
	case c.Trust.Profile == "":
		return fmt.Errorf("empty trust profile")
	}
	conc := limitOf("Channel.Concurrency")
	for _, ch := range c.channels {
		if err := conc.check(int64(ch.concurrency)); err != nil {
			return fmt.Errorf("channel %s: %w", ch.name, err)
		}
	}
	return nil
}

// CheckWeight refuses a weight outside 0..10000.
func CheckWeight(w int) error {
	if w < MinWeight || w > MaxWeight {
		return &ConfigError{Err: ErrWeightRange, Detail: fmt.Sprintf("weight %d", w)}
	}
	return nil
}

// validEndpoint accepts tcp://HOST:PORT and nothing more: no path, query
// or user. A listen endpoint may use port 0 (pick a free one) and the
// wildcard host "*"; a peer endpoint names a real host and port.
func validEndpoint(ep string, listen bool) error {
	u, err := url.Parse(ep)
	if err != nil {
		return err
	}
	if u.Scheme != "tcp" {
		return fmt.Errorf("scheme %q, want tcp://HOST:PORT", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" || u.Port() == "" {
		return fmt.Errorf("%q: want tcp://HOST:PORT", ep)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: want tcp://HOST:PORT with nothing after the port", ep)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("%q: port %q", ep, u.Port())
	}
	if !listen && (port == 0 || u.Hostname() == "*") {
		return fmt.Errorf("%q: a peer endpoint needs a real host and port", ep)
	}
	return nil
}

// validAdvertiseHost accepts an IP address (IPv6 with or without brackets)
// or a DNS host name that peers can dial: no scheme, port or path, and not
// an unspecified address.
func validAdvertiseHost(h string) error {
	if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); ip != nil {
		if ip.IsUnspecified() {
			return fmt.Errorf("%q is not an address peers can dial", h)
		}
		return nil
	}
	if len(h) > 253 {
		return fmt.Errorf("host name longer than 253 bytes")
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%q: want an IP address or a host name", h)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("%q: want an IP address or a host name", h)
			}
		}
	}
	return nil
}
