package fault

import "github.com/zlink-go/zlink/location/locationtest"

// StartRedis starts a redis-server on a free loopback port outside a test
// (dir holds its files). Stop kills it like a crash, its data lost; Start
// brings it back, empty, on the same port. The caller stops it. Tests use
// locationtest.StartRedis, which stops it at cleanup.
func StartRedis(dir string) (*locationtest.RedisServer, error) { return locationtest.LaunchRedis(dir) }
