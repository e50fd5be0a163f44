package fanout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/actors"
	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/location"
)

// PublisherConfig configures one publisher. A zero duration or size takes
// its default (DefaultPublisherConfig).
type PublisherConfig struct {
	// Channel is the fanout ChannelName; required; must not contain '{' or
	// '}'.
	Channel string
	// Listen is the PUB bind endpoint, "tcp://host:port"; port 0 picks a
	// free port. Default "tcp://127.0.0.1:0".
	Listen string
	// AdvertiseHost, optional, replaces the bound host in the published
	// endpoint (an unspecified bind address advertises 127.0.0.1).
	AdvertiseHost string
	// Store, when set, makes the publisher automatic: it publishes one
	// fanout publisher descriptor and renews it. Nil = manual: nothing is
	// written anywhere; subscribers must be given Endpoint().
	Store location.Publishers
	// TTL is the descriptor lease; renewed every TTL/3. Default 10s,
	// minimum 10ms.
	TTL time.Duration
	// RID, optional, is the publisher lifecycle RID. Default "fpub-<random>".
	RID string
	// HeartbeatInterval is the period of the heartbeat message on the
	// reserved topic. Default 1s. Keep it well below the subscribers'
	// ReceiveTimeout.
	HeartbeatInterval time.Duration
	// SendHWM bounds the PUB send queue in messages; past it Publish drops.
	// Default 10000.
	SendHWM int
	// WriteTimeout is the per-connection write deadline: a subscriber that
	// accepts nothing for this long loses its connection instead of
	// stalling the others. Default 5s.
	WriteTimeout time.Duration
	// Logger receives lifecycle events (info) and failures (warn).
	Logger zerolog.Logger
	// System, optional, is the actor system the publisher's actor runs
	// in, as child "publisher" of Parent (top level when Parent is nil);
	// Parent's supervisor decides its restarts. Nil: an internal actor
	// system supervising with DefaultSupervision, shut down by Close.
	System *actors.System
	// Parent, optional with System, supervises the publisher's actor.
	Parent *actors.Ref
}

// DefaultPublisherConfig returns the defaults documented on PublisherConfig.
func DefaultPublisherConfig() PublisherConfig {
	return PublisherConfig{
		Listen:            "tcp://127.0.0.1:0",
		TTL:               10 * time.Second,
		HeartbeatInterval: time.Second,
		SendHWM:           10000,
		WriteTimeout:      5 * time.Second,
		Logger:            zerolog.Nop(),
	}
}

func (c PublisherConfig) withDefaults() PublisherConfig {
	d := DefaultPublisherConfig()
	if c.Listen == "" {
		c.Listen = d.Listen
	}
	if c.TTL == 0 {
		c.TTL = d.TTL
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = d.HeartbeatInterval
	}
	if c.SendHWM == 0 {
		c.SendHWM = d.SendHWM
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	return c
}

func (c PublisherConfig) validate() error {
	if err := CheckChannel(c.Channel); err != nil {
		return err
	}
	if c.Parent != nil && c.System == nil {
		return fmt.Errorf("%w: Parent without System", ErrInvalidConfig)
	}
	if _, err := zguard.Endpoint(c.Listen); err != nil {
		return fmt.Errorf("%w: listen: %w", ErrInvalidConfig, err)
	}
	switch {
	case c.TTL < 10*time.Millisecond:
		return fmt.Errorf("%w: TTL %v below 10ms", ErrInvalidConfig, c.TTL)
	case c.HeartbeatInterval < time.Millisecond:
		return fmt.Errorf("%w: HeartbeatInterval %v below 1ms", ErrInvalidConfig, c.HeartbeatInterval)
	case c.SendHWM < 0:
		return fmt.Errorf("%w: SendHWM %d", ErrInvalidConfig, c.SendHWM)
	case c.WriteTimeout < 0:
		return fmt.Errorf("%w: WriteTimeout %v", ErrInvalidConfig, c.WriteTimeout)
	}
	return nil
}

// Message is one received fanout message.
type Message struct {
	// Publisher is the publisher RID (automatic) or its endpoint (manual).
	Publisher string
	Topic     string
	Payload   []byte
}

// SubscriberConfig configures one subscriber. A zero duration or size takes
// its default (DefaultSubscriberConfig).
type SubscriberConfig struct {
	// Channel is the fanout ChannelName; required.
	Channel string
	// Automatic reads the publisher descriptors of Channel from Store.
	// Mutually exclusive with Endpoints (ErrSourceConflict).
	Automatic bool
	// Store is the Location Store of automatic mode; required there and
	// never read in manual mode.
	Store location.Publishers
	// Endpoints are the manual publisher endpoints ("tcp://host:port"),
	// one SUB socket each; duplicates are refused.
	Endpoints []string
	// Topics are the subscribed topic prefixes; empty = every topic. Topics
	// starting with byte 0xFF are reserved (ErrReservedTopic).
	Topics []string
	// ReceiveTimeout, per publisher: nothing (message or heartbeat) heard
	// from that publisher for this long makes it TimedOut. Never applied to
	// another publisher. Default 3s.
	ReceiveTimeout time.Duration
	// PollInterval is the period of ListPublishers in automatic mode.
	// Default 1s.
	PollInterval time.Duration
	// Handler, optional, receives every message except heartbeats. It runs
	// on the receive goroutine of the message's publisher: calls for one
	// publisher are sequential and in order, different publishers run
	// concurrently. A slow handler delays only its own publisher. Across a
	// restart of the subscriber's actor, a call made on the old connection
	// may still be running when the new connection delivers.
	Handler func(Message)
	// MaxMessageSize bounds one received frame in bytes; a publisher
	// announcing more loses its connection. Default 64 MiB.
	MaxMessageSize uint64
	// Logger receives connection events (debug) and failures (warn).
	Logger zerolog.Logger
	// System, optional, is the actor system the subscriber's actor runs
	// in, as child "subscriber" of Parent (top level when Parent is nil);
	// Parent's supervisor decides its restarts. Nil: an internal actor
	// system supervising with DefaultSupervision, shut down by Close.
	System *actors.System
	// Parent, optional with System, supervises the subscriber's actor.
	Parent *actors.Ref
}

// DefaultSubscriberConfig returns the defaults documented on
// SubscriberConfig.
func DefaultSubscriberConfig() SubscriberConfig {
	return SubscriberConfig{
		ReceiveTimeout: 3 * time.Second,
		PollInterval:   time.Second,
		MaxMessageSize: 64 << 20,
		Logger:         zerolog.Nop(),
	}
}

func (c SubscriberConfig) withDefaults() SubscriberConfig {
	d := DefaultSubscriberConfig()
	if c.ReceiveTimeout == 0 {
		c.ReceiveTimeout = d.ReceiveTimeout
	}
	if c.PollInterval == 0 {
		c.PollInterval = d.PollInterval
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = d.MaxMessageSize
	}
	return c
}

func (c SubscriberConfig) validate() error {
	if err := CheckChannel(c.Channel); err != nil {
		return err
	}
	if c.Parent != nil && c.System == nil {
		return fmt.Errorf("%w: Parent without System", ErrInvalidConfig)
	}
	if err := CheckSubscriberSource(c.Automatic, c.Endpoints, c.Store != nil); err != nil {
		return fmt.Errorf("%w: channel %s", err, c.Channel)
	}
	switch {
	case c.ReceiveTimeout < time.Millisecond:
		return fmt.Errorf("%w: ReceiveTimeout %v below 1ms", ErrInvalidConfig, c.ReceiveTimeout)
	case c.PollInterval < time.Millisecond:
		return fmt.Errorf("%w: PollInterval %v below 1ms", ErrInvalidConfig, c.PollInterval)
	}
	for i, ep := range c.Endpoints {
		if _, err := zguard.Endpoint(ep); err != nil {
			return fmt.Errorf("%w: endpoint: %w", ErrInvalidConfig, err)
		}
		if slices.Contains(c.Endpoints[:i], ep) {
			return fmt.Errorf("%w: endpoint %s listed twice", ErrInvalidConfig, ep)
		}
	}
	for _, t := range c.Topics {
		if reserved(t) {
			return fmt.Errorf("%w: %q", ErrReservedTopic, t)
		}
	}
	return nil
}

// CheckSubscriberSource is the one definition of a subscriber's source
// rule: its publishers come either from the Location Store (automatic) or
// from endpoints (manual), exactly one of the two, and automatic needs a
// store. It returns an error matching ErrSourceConflict (both), ErrNoSource
// (neither) or ErrInvalidConfig and ErrNeedsLocationStore (automatic without
// a store), or nil. StartSubscriber applies it, and so does the startup
// validation of zlink.Start (routemesh.Topology.Validate), so errors.Is
// matches the same sentinel whichever way the subscriber was configured.
func CheckSubscriberSource(automatic bool, endpoints []string, hasStore bool) error {
	switch {
	case automatic && len(endpoints) > 0:
		return ErrSourceConflict
	case !automatic && len(endpoints) == 0:
		return ErrNoSource
	case automatic && !hasStore:
		return fmt.Errorf("%w: %w", ErrInvalidConfig, ErrNeedsLocationStore)
	}
	return nil
}

// CheckChannel is the one definition of a valid fanout ChannelName:
// non-empty, without '{' or '}'. It returns an error matching
// ErrInvalidConfig, or nil. StartPublisher, StartSubscriber and the startup
// validation of zlink.Start apply it.
func CheckChannel(ch string) error {
	if ch == "" || strings.ContainsAny(ch, "{}") {
		return fmt.Errorf("%w: channel %q", ErrInvalidConfig, ch)
	}
	return nil
}
