package actors

import "log/slog"

// ProtoLogger is the slog logger of s's protoactor system, for the test
// that checks protoactor's output reaches zerolog. Test-only: the raw
// protoactor system is not part of the public API.
func ProtoLogger(s *System) *slog.Logger { return s.as.Logger() }
