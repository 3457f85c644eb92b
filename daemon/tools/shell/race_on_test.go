//go:build race

package shell

// raceSlowdown is how many times slower the race detector makes the
// analysis (5–10× for the parser and the walk): the timing bounds of the
// tests are multiplied by it.
const raceSlowdown = 5
