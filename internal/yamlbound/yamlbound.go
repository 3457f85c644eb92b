// Package yamlbound bounds what a YAML document stands for once its aliases
// are expanded. An alias repeats its anchor's whole value, and anchors may
// hold aliases of earlier anchors, so a few hundred bytes of frontmatter
// can stand for gigabytes ("a billion laughs"): decoding it into Go values
// builds all of it. Check measures the expansion from the syntax tree
// without building it, each anchor's size computed once, so a hostile file
// is refused in time linear in its length.
package yamlbound

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Limits are the most a document may expand to.
type Limits struct {
	// Bytes bounds the text of the scalars (keys and values), aliases
	// expanded.
	Bytes int
	// Nodes bounds the scalars, mappings and sequences, aliases expanded.
	Nodes int
}

// Check returns an error naming the bound passed when src, its aliases
// expanded, holds more than lim allows. A document that does not parse is
// not its business (nil): the caller's decoder reports that.
func Check(src []byte, lim Limits) error {
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil
	}
	return CheckFile(f, lim)
}

// CheckFile is Check of a parsed file.
func CheckFile(f *ast.File, lim Limits) error {
	m := measure{anchors: map[string]size{}}
	var total size
	for _, d := range f.Docs {
		total = total.add(m.node(d))
	}
	switch {
	case total.bytes > lim.Bytes:
		return fmt.Errorf("its YAML aliases expand it to more than %d bytes", lim.Bytes)
	case total.nodes > lim.Nodes:
		return fmt.Errorf("its YAML aliases expand it to more than %d values", lim.Nodes)
	}
	return nil
}

// size is the text and the count of values a node stands for. Both
// saturate, so that no sum overflows.
type size struct{ bytes, nodes int }

const saturated = 1 << 50

func (s size) add(o size) size {
	return size{min(s.bytes+o.bytes, saturated), min(s.nodes+o.nodes, saturated)}
}

// measure walks one file; anchors holds the size of each anchor defined so
// far (a later anchor of the same name replaces it, as in YAML).
type measure struct {
	anchors map[string]size
	depth   int
}

func (m *measure) node(n ast.Node) size {
	if n == nil {
		return size{}
	}
	m.depth++
	defer func() { m.depth-- }()
	if m.depth > 10000 {
		return size{saturated, saturated} // the decoder refuses such nesting too
	}
	switch n := n.(type) {
	case *ast.DocumentNode:
		return m.node(n.Body)
	case *ast.TagNode:
		return m.node(n.Value)
	case *ast.MappingNode:
		s := size{nodes: 1}
		for _, v := range n.Values {
			s = s.add(m.node(v))
		}
		return s
	case *ast.MappingValueNode:
		return m.node(n.Key).add(m.node(n.Value))
	case *ast.MappingKeyNode:
		return m.node(n.Value)
	case *ast.SequenceNode:
		s := size{nodes: 1}
		for _, v := range n.Values {
			s = s.add(m.node(v))
		}
		return s
	case *ast.AnchorNode:
		s := m.node(n.Value)
		if n.Name != nil {
			m.anchors[n.Name.GetToken().Value] = s
		}
		return s
	case *ast.AliasNode:
		if n.Value == nil {
			return size{}
		}
		return m.anchors[n.Value.GetToken().Value]
	case *ast.CommentNode, *ast.CommentGroupNode:
		return size{}
	}
	// A scalar (string, literal block, number, bool, null, merge key).
	s := size{nodes: 1}
	if t := n.GetToken(); t != nil {
		s.bytes = len(t.Value)
	}
	if l, ok := n.(*ast.LiteralNode); ok && l.Value != nil {
		s.bytes = len(l.Value.GetToken().Value)
	}
	return s
}
