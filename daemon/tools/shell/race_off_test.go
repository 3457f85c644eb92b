//go:build !race

package shell

// raceSlowdown is how many times slower the race detector makes the
// analysis: the timing bounds of the tests are multiplied by it.
const raceSlowdown = 1
