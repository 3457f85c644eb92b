//go:build race

package search

// raceDetector says the tests run with the race detector, which makes
// searching Go's whole source tree several times slower.
const raceDetector = true
