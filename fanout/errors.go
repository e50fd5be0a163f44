package fanout

import (
	"errors"

	"github.com/zlink-go/zlink/internal/zerr"
)

var (
	// ErrSourceConflict: a subscriber was configured both automatic and
	// manual (Endpoints). Startup fails; the sources are never merged.
	ErrSourceConflict = errors.New("zlink: fanout subscriber configured both automatic and manual")
	// ErrNoSource: a subscriber has neither Automatic nor Endpoints.
	ErrNoSource = errors.New("zlink: fanout subscriber has no publisher source")
	// ErrInvalidConfig: a configuration value is missing or out of range.
	ErrInvalidConfig = errors.New("zlink: invalid fanout configuration")
	// ErrReservedTopic: the topic starts with the reserved byte 0xFF.
	ErrReservedTopic = errors.New("zlink: fanout topic is reserved")
	// ErrNeedsLocationStore: an automatic subscriber has no Location Store.
	// It comes wrapped together with ErrInvalidConfig. The same value is
	// routemesh.ErrNeedsLocationStore and zlink.ErrNeedsLocationStore.
	ErrNeedsLocationStore = zerr.ErrNeedsLocationStore
	// ErrClosed: the publisher or subscriber was closed.
	ErrClosed = errors.New("zlink: fanout closed")
)

var (
	// ErrRestarting: the publisher's actor is being restarted; nothing was
	// sent. Retry later.
	ErrRestarting = errors.New("zlink: fanout restarting")
	// ErrFailed: the publisher or subscriber failed for good (its actor
	// could not be restarted, e.g. the endpoint could not be bound again,
	// or it failed past its supervisor's restart limit). Err returns it
	// with the reason.
	ErrFailed = errors.New("zlink: fanout failed")
)
