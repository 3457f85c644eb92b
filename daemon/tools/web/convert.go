package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html/charset"
)

// kind is how WebFetch treats a content type.
type kind int

const (
	kindUnsupported kind = iota
	kindHTML
	kindText
	kindJSON
)

// classify returns how to treat a media type (without parameters).
func classify(mediaType string) kind {
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml":
		return kindHTML
	case mediaType == "application/json" || strings.HasSuffix(mediaType, "+json"):
		return kindJSON
	case strings.HasPrefix(mediaType, "text/"),
		mediaType == "application/xml" || strings.HasSuffix(mediaType, "+xml"),
		mediaType == "application/javascript" || mediaType == "application/x-javascript",
		mediaType == "application/yaml" || mediaType == "application/x-yaml",
		mediaType == "application/toml", mediaType == "application/x-sh":
		return kindText
	}
	return kindUnsupported
}

// mediaType returns the lowercased media type of a Content-Type header and
// its parameters, or "" when the header is missing or unparsable.
func mediaType(header string) (string, map[string]string) {
	if header == "" {
		return "", nil
	}
	mt, params, err := mime.ParseMediaType(header)
	if err != nil {
		// Keep what precedes the first ";" (servers send odd parameters).
		mt, _, _ = strings.Cut(header, ";")
		return strings.ToLower(strings.TrimSpace(mt)), nil
	}
	return mt, params
}

// sniff guesses the media type of a body without a Content-Type header.
func sniff(head []byte) string {
	mt, _ := mediaType(http.DetectContentType(head))
	return mt
}

// toUTF8 decodes body to UTF-8 using the charset of the Content-Type header
// or, for HTML, of a <meta> tag; invalid sequences become U+FFFD.
func toUTF8(body []byte, contentType string, k kind) string {
	if k == kindHTML || k == kindText {
		if _, params := mediaType(contentType); params["charset"] != "" || k == kindHTML {
			enc, name, _ := charset.DetermineEncoding(body, contentType)
			if name != "utf-8" && name != "" {
				if out, err := io.ReadAll(enc.NewDecoder().Reader(bytes.NewReader(body))); err == nil {
					body = out
				}
			}
		}
	}
	s := string(body)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// htmlToMarkdown converts an HTML document to Markdown: tables as Markdown
// tables, code blocks fenced, links kept and made absolute against base.
func htmlToMarkdown(ctx context.Context, doc, pageURL string) (string, error) {
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(commonmark.WithCodeBlockFence("```"), commonmark.WithListEndComment(false)),
		strikethrough.NewStrikethroughPlugin(),
		table.NewTablePlugin(table.WithSpanCellBehavior(table.SpanBehaviorMirror), table.WithHeaderPromotion(true)),
	))
	md, err := conv.ConvertString(doc, converter.WithDomain(pageURL), converter.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("converting HTML to Markdown: %w", err)
	}
	return strings.TrimSpace(md), nil
}

// prettyJSON indents valid JSON and returns anything else as it is.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s
	}
	return buf.String()
}
