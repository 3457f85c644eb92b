package toolsearch_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/toolsearch"
)

func TestCorpusSize(t *testing.T) {
	if n := len(corpus(1)); n < 200 {
		t.Fatalf("corpus has %d tools, want 200+", n)
	}
}

// TestRanking checks that the obviously right tool ranks in the top 3 for
// natural queries, as a model would write them.
func TestRanking(t *testing.T) {
	ix := toolsearch.NewIndex(corpus(1))
	tests := []struct{ query, want string }{
		{"send a message to a slack channel", "mcp__slack__slack_post_message"},
		{"slack direct message", "mcp__slack__slack_send_direct_message"},
		{"reply in thread", "mcp__slack__slack_reply_to_thread"},
		{"add emoji reaction", "mcp__slack__slack_add_reaction"},
		{"create github pull request", "mcp__github__create_pull_request"},
		{"merge PR", "mcp__github__merge_pull_request"},
		{"open a new github issue", "mcp__github__create_issue"},
		{"comment on github issue", "mcp__github__add_issue_comment"},
		{"search code", "mcp__github__search_code"},
		{"rerun failed CI workflow", "mcp__github__rerun_workflow"},
		{"fork repo", "mcp__github__fork_repository"},
		{"jira JQL search", "mcp__jira__jira_search"},
		{"move jira ticket to done", "mcp__jira__jira_transition_issue"},
		{"log time spent working on a jira ticket", "mcp__jira__jira_add_worklog"},
		{"sprint issues", "mcp__jira__jira_get_sprint_issues"},
		{"run SQL query", "mcp__postgres__query"},
		{"table columns", "mcp__postgres__describe_table"},
		{"explain query plan", "mcp__postgres__explain_query"},
		{"slow queries", "mcp__postgres__get_top_queries"},
		{"database health vacuum bloat", "mcp__postgres__analyze_db_health"},
		{"read a text file", "mcp__filesystem__read_text_file"},
		{"rename file", "mcp__filesystem__move_file"},
		{"directory tree", "mcp__filesystem__directory_tree"},
		{"file metadata modification time", "mcp__filesystem__get_file_info"},
		{"google sheets spreadsheet", "mcp__gdrive__gsheets_read"},
		{"linear issue create", "mcp__linear__linear_create_issue"},
		{"sentry stack trace", "mcp__sentry__get_sentry_issue"},
		{"notion database query", "mcp__notion__API-post-database-query"},
		{"append blocks to notion page", "mcp__notion__API-patch-block-children"},
		{"refund payment", "mcp__stripe__create_refund"},
		{"create invoice", "mcp__stripe__create_invoice"},
		{"cancel subscription", "mcp__stripe__cancel_subscription"},
		{"pod logs", "mcp__kubernetes__kubectl_logs"},
		{"scale deployment replicas", "mcp__kubernetes__kubectl_scale"},
		{"helm chart", "mcp__kubernetes__install_helm_chart"},
		{"send email", "mcp__google-workspace__gmail_send_email"},
		{"new calendar event", "mcp__google-workspace__calendar_create_event"},
		{"find free time for a meeting", "mcp__google-workspace__calendar_find_free_time"},
		{"take screenshot of the page", "mcp__puppeteer__puppeteer_screenshot"},
		{"navigate browser to url", "mcp__puppeteer__puppeteer_navigate"},
		{"knowledge graph relations", "mcp__memory__create_relations"},
		{"docker container logs", "mcp__docker__fetch_container_logs"},
		{"build docker image", "mcp__docker__build_image"},
		{"fetch web page as markdown", "mcp__fetch__fetch"},
		{"current time timezone", "mcp__time__get_current_time"},
		{"sendDirectMessage", "mcp__slack__slack_send_direct_message"},           // camelCase query
		{"list_workflow_runs", "mcp__github__list_workflow_runs"},                // a name part query
		{"repositories search", "mcp__github__search_repositories"},              // plural / order
		{"creating branches", "mcp__github__create_branch"},                      // stemming
		{"kubectl", "mcp__kubernetes__kubectl_get"},                              // name part only
		{"screensh", "mcp__puppeteer__puppeteer_screenshot"},                     // prefix of a word
		{"PULL REQUEST REVIEW", "mcp__github__create_pull_request_review"},       // case
		{"gsheets update cell value", "mcp__gdrive__gsheets_update_cell"},        // name parts and description
		{"retrieve notion page", "mcp__notion__API-retrieve-a-page"},             // kebab-case name
		{"archive slack channel", "mcp__slack__slack_archive_channel"},           // server name in query
		{"kubernetes port forward", "mcp__kubernetes__port_forward"},             // server name in query
		{"postgres extensions", "mcp__postgres__list_extensions"},                // server name in query
		{"download jira attachments", "mcp__jira__jira_download_attachments"},    // plural
		{"remove docker volume", "mcp__docker__remove_volume"},                   // synonym in the name
		{"find files matching a glob pattern", "mcp__filesystem__search_files"},  // synonym
		{"execute a shell command inside a pod", "mcp__kubernetes__exec_in_pod"}, // name and description
		{"git commit history", "mcp__git__git_log"},                              // server name, weak words
		{"staged changes", "mcp__git__git_diff_staged"},                          // stemming
		{"web search news", "mcp__brave-search__brave_web_search"},               // dashed server
		{"library documentation", "mcp__context7__get-library-docs"},             // prefix: docs / documentation
		{"redis key value", "mcp__redis__get"},                                   // short tool name
		{"sqlite insert row", "mcp__sqlite__write_query"},                        // description words
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got := names(ix.Search(tt.query, 3))
			if !slices.Contains(got, tt.want) {
				t.Errorf("Search(%q) top 3 = %v, want %s among them (top 10: %v)", tt.query, got, tt.want, names(ix.Search(tt.query, 10)))
			}
		})
	}
}

func TestSearchForms(t *testing.T) {
	ix := toolsearch.NewIndex(corpus(1))
	slack := func(n ...string) []string {
		out := make([]string, len(n))
		for i, s := range n {
			out[i] = mcpName("slack", s)
		}
		return out
	}
	tests := []struct {
		name  string
		query string
		max   int
		want  []string
	}{
		{"select in order", "select:mcp__postgres__query,mcp__slack__slack_post_message", 0,
			[]string{"mcp__postgres__query", "mcp__slack__slack_post_message"}},
		{"select unknown ignored", "select:nope,mcp__time__convert_time,mcp__x__y", 0, []string{"mcp__time__convert_time"}},
		{"select spaces and duplicates", "select: mcp__time__convert_time , mcp__time__convert_time,mcp__fetch__fetch", 0,
			[]string{"mcp__time__convert_time", "mcp__fetch__fetch"}},
		{"select is not limited by max", "select:mcp__time__convert_time,mcp__fetch__fetch,mcp__time__get_current_time", 1,
			[]string{"mcp__time__convert_time", "mcp__fetch__fetch", "mcp__time__get_current_time"}},
		{"select case-insensitive fallback", "SELECT:MCP__FETCH__FETCH", 0, []string{"mcp__fetch__fetch"}},
		{"select nothing known", "select:Read,Bash", 0, nil},
		{"select empty", "select:", 0, nil},
		{"exact name", "mcp__postgres__list_tables", 0, []string{"mcp__postgres__list_tables"}},
		{"server prefix in order, default max", "mcp__slack__", 0,
			slack("slack_list_channels", "slack_post_message", "slack_reply_to_thread", "slack_add_reaction", "slack_get_channel_history")},
		{"server prefix without trailing __", "mcp__time", 0, []string{"mcp__time__get_current_time", "mcp__time__convert_time"}},
		{"server prefix with max", "mcp__slack__", 2, slack("slack_list_channels", "slack_post_message")},
		{"server prefix ranked by the rest", "mcp__slack__ user profile", 1, slack("slack_get_user_profile")},
		{"server prefix with a dash", "mcp__google-workspace__", 2,
			[]string{"mcp__google-workspace__gmail_search_messages", "mcp__google-workspace__gmail_get_message"}},
		{"unknown server prefix is a keyword", "mcp__nosuch__", 0, nil},
		{"required term ranks the rest", "+slack user profile", 1, slack("slack_get_user_profile")},
		{"required term excludes others", "+jira user profile", 1, []string{"mcp__jira__jira_get_user_profile"}},
		{"required term alone lists in order", "+kubectl", 3,
			[]string{"mcp__kubernetes__kubectl_get", "mcp__kubernetes__kubectl_describe", "mcp__kubernetes__kubectl_logs"}},
		{"required term matching no name", "+zzz send", 0, nil},
		{"two required terms", "+pull +request +files", 0, []string{"mcp__github__get_pull_request_files"}},
		{"no match", "xylophone quantum", 0, nil},
		{"stop words only", "the of and", 0, nil},
		{"blank", "   ", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(ix.Search(tt.query, tt.max))
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Search(%q, %d) (-want +got):\n%s", tt.query, tt.max, diff)
			}
		})
	}
}

func TestSearchMaxResults(t *testing.T) {
	ix := toolsearch.NewIndex(corpus(1))
	for _, max := range []int{-1, 0, 1, 3, 5, 12, 1000} {
		got := ix.Search("list", max)
		want := max
		if max <= 0 {
			want = toolsearch.DefaultMaxResults
		}
		all := len(ix.Search("list", 1<<20))
		if all < 20 {
			t.Fatalf("only %d tools match %q", all, "list")
		}
		want = min(want, all)
		if len(got) != want {
			t.Errorf("Search(list, %d) returned %d tools, want %d", max, len(got), want)
		}
	}
	// A larger max extends the same ranking.
	short, long := names(ix.Search("create issue", 3)), names(ix.Search("create issue", 10))
	if diff := cmp.Diff(short, long[:3]); diff != "" {
		t.Errorf("top 3 is not the start of top 10 (-top3 +top10[:3]):\n%s", diff)
	}
}

// TestIndexDuplicatesAndEmpty checks an empty index and a set with a
// duplicate name (the first is kept).
func TestIndexDuplicatesAndEmpty(t *testing.T) {
	empty := toolsearch.NewIndex(nil)
	for _, q := range []string{"anything", "select:a", "+x", "mcp__slack__"} {
		if got := empty.Search(q, 5); len(got) != 0 {
			t.Errorf("empty index: Search(%q) = %v", q, names(got))
		}
	}
	first, second := builtin("Dup", true), builtin("Dup", true)
	ix := toolsearch.NewIndex([]tool.Tool{first, second})
	if ix.Len() != 1 {
		t.Fatalf("Len = %d, want 1", ix.Len())
	}
	if got := ix.Search("select:Dup", 0); len(got) != 1 || got[0] != first {
		t.Errorf("select:Dup = %v, want the first tool", got)
	}
}

// TestScale checks that many copies of the same servers keep the ranking
// sensible: the right tool of every copy ties, and a +server term picks one.
func TestScale(t *testing.T) {
	ix := toolsearch.NewIndex(corpus(10))
	got := names(ix.Search("+slack3 post message", 1))
	if diff := cmp.Diff([]string{"mcp__slack3__slack_post_message"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, n := range names(ix.Search("post message slack channel", 5)) {
		if !strings.HasSuffix(n, "__slack_post_message") {
			t.Errorf("post message slack channel: got %s among the top 5", n)
		}
	}
	if got := ix.Search(fmt.Sprintf("mcp__%s__", "github7"), 100); len(got) != 26 {
		t.Errorf("mcp__github7__ gave %d tools, want 26", len(got))
	}
}
