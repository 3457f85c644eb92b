package fakemodel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// idGen makes ids shaped like the real APIs' and signs thinking blocks.
// Safe for concurrent use.
type idGen struct {
	key []byte // signs thinking; fixed at construction

	mu  sync.Mutex // guards rng
	rng *rand.Rand
}

func newIDGen(seed uint64) *idGen {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(rng.UintN(256))
	}
	return &idGen{key: key, rng: rng}
}

func (g *idGen) chars(n int, alphabet string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

func (g *idGen) bytes(n int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.UintN(256))
	}
	return b
}

// message is an Anthropic message id: msg_01 and 22 base62 characters.
func (g *idGen) message() string { return "msg_01" + g.chars(22, base62) }

// toolUse is an Anthropic tool_use id: toolu_01 and 22 base62 characters.
func (g *idGen) toolUse() string { return "toolu_01" + g.chars(22, base62) }

// request is an Anthropic request id (header request-id, body request_id).
func (g *idGen) request() string { return "req_011C" + g.chars(20, base62) }

// call is an OpenAI tool call id: call_ and 24 base62 characters.
func (g *idGen) call() string { return "call_" + g.chars(24, base62) }

// completion is an OpenAI chat completion id.
func (g *idGen) completion() string { return "chatcmpl-" + g.chars(29, base62) }

// openAIRequest is OpenAI's x-request-id.
func (g *idGen) openAIRequest() string { return "req_" + g.chars(32, "0123456789abcdef") }

// fingerprint is an OpenAI system_fingerprint.
func (g *idGen) fingerprint() string { return "fp_" + g.chars(10, "0123456789abcdef") }

func (g *idGen) mac(parts ...[]byte) []byte {
	m := hmac.New(sha256.New, g.key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// sign makes a signature for a thinking text: opaque base64, like the real
// ones (which start "E…"), that verifies with the seed's key only (so a
// server with the same Seed accepts it, as the API accepts old signatures).
func (g *idGen) sign(thinking string) string {
	sum := g.mac([]byte("thinking:"), []byte(thinking))
	raw := append([]byte{0x12, 0x40}, sum...)
	raw = append(raw, sum[:16]...)
	return base64.StdEncoding.EncodeToString(raw)
}

// redactedPrefix starts every redacted_thinking data this server makes.
const redactedPrefix = "EmwKAhgB"

// redacted makes the data of a redacted_thinking block: random bytes and
// their MAC.
func (g *idGen) redacted() string {
	r := g.bytes(40)
	return redactedPrefix + base64.StdEncoding.EncodeToString(append(r, g.mac([]byte("redacted:"), r)...))
}

// verifyRedacted reports whether data was made by redacted with this key.
func (g *idGen) verifyRedacted(data string) bool {
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(data, redactedPrefix))
	if err != nil || !strings.HasPrefix(data, redactedPrefix) || len(b) != 40+sha256.Size {
		return false
	}
	return hmac.Equal(b[40:], g.mac([]byte("redacted:"), b[:40]))
}

// maskKey shows an API key as OpenAI's 401 does: the start and the end.
func maskKey(k string) string {
	if len(k) <= 8 {
		return fmt.Sprintf("%s%s", k[:min(len(k), 2)], "****")
	}
	return k[:4] + "********" + k[len(k)-4:]
}
