package toolsearch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// fakeTool is a tool.Tool test double: this package only reads specs and
// attributes.
type fakeTool struct {
	spec  tool.Spec
	attrs tool.Attributes
}

func (f *fakeTool) Spec() tool.Spec                            { return f.spec }
func (f *fakeTool) Attributes(json.RawMessage) tool.Attributes { return f.attrs }
func (f *fakeTool) Validate(context.Context, *tool.Call) error { return nil }
func (f *fakeTool) CheckPermission(context.Context, *tool.Call) (tool.Access, error) {
	return tool.Access{Kind: tool.AccessExternal}, nil
}
func (f *fakeTool) Run(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
	return tool.TextResult("ran " + f.spec.Name), nil
}

// builtin returns a built-in test double; deferred says whether its
// attributes ask for deferral.
func builtin(name string, deferred bool, aliases ...string) tool.Tool {
	return &fakeTool{
		spec:  tool.Spec{Name: name, Aliases: aliases, Description: name + " does built-in things.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		attrs: tool.Attributes{Origin: tool.OriginBuiltin, Deferred: deferred},
	}
}

// entry is one MCP tool of the corpus: name on the server, description,
// parameters (name:type).
type entry struct {
	name, desc string
	params     []string
}

// servers is a corpus of MCP servers modelled on real ones (Slack, GitHub,
// Jira, Postgres, a filesystem server, Google Drive, Linear, Sentry,
// Notion, Stripe, Kubernetes, Gmail/Calendar, Puppeteer). Names follow the
// servers' own styles: snake_case, camelCase and kebab-case.
var servers = []struct {
	name  string
	tools []entry
}{
	{"slack", []entry{
		{"slack_list_channels", "List public channels in the workspace with pagination", []string{"limit:integer", "cursor:string"}},
		{"slack_post_message", "Post a new message to a Slack channel", []string{"channel_id:string", "text:string"}},
		{"slack_reply_to_thread", "Reply to a specific message thread in Slack", []string{"channel_id:string", "thread_ts:string", "text:string"}},
		{"slack_add_reaction", "Add a reaction emoji to a message", []string{"channel_id:string", "timestamp:string", "reaction:string"}},
		{"slack_get_channel_history", "Get recent messages from a channel", []string{"channel_id:string", "limit:integer"}},
		{"slack_get_thread_replies", "Get all replies in a message thread", []string{"channel_id:string", "thread_ts:string"}},
		{"slack_get_users", "Get a list of all users in the workspace with their basic profile information", []string{"cursor:string", "limit:integer"}},
		{"slack_get_user_profile", "Get detailed profile information for a specific user", []string{"user_id:string"}},
		{"slack_search_messages", "Search for messages across the workspace matching a query", []string{"query:string", "count:integer"}},
		{"slack_create_channel", "Create a new public or private channel", []string{"name:string", "is_private:boolean"}},
		{"slack_archive_channel", "Archive a channel so that no new messages can be posted", []string{"channel_id:string"}},
		{"slack_invite_to_channel", "Invite users to join a channel", []string{"channel_id:string", "users:array"}},
		{"slack_set_channel_topic", "Set the topic of a channel", []string{"channel_id:string", "topic:string"}},
		{"slack_upload_file", "Upload a file or snippet to one or more channels", []string{"channels:array", "content:string", "filename:string"}},
		{"slack_schedule_message", "Schedule a message to be sent to a channel at a later time", []string{"channel_id:string", "post_at:integer", "text:string"}},
		{"slack_send_direct_message", "Send a direct message (DM) to a single user", []string{"user_id:string", "text:string"}},
		{"slack_pin_message", "Pin a message to a channel", []string{"channel_id:string", "timestamp:string"}},
		{"slack_set_status", "Set the status text and emoji of the authenticated user", []string{"status_text:string", "status_emoji:string"}},
	}},
	{"github", []entry{
		{"create_or_update_file", "Create or update a single file in a GitHub repository", []string{"owner:string", "repo:string", "path:string", "content:string", "message:string", "branch:string"}},
		{"search_repositories", "Search for GitHub repositories", []string{"query:string", "page:integer"}},
		{"create_repository", "Create a new GitHub repository in your account", []string{"name:string", "private:boolean"}},
		{"get_file_contents", "Get the contents of a file or directory from a GitHub repository", []string{"owner:string", "repo:string", "path:string"}},
		{"push_files", "Push multiple files to a GitHub repository in a single commit", []string{"owner:string", "repo:string", "branch:string", "files:array"}},
		{"create_issue", "Create a new issue in a GitHub repository", []string{"owner:string", "repo:string", "title:string", "body:string", "labels:array"}},
		{"create_pull_request", "Create a new pull request in a GitHub repository", []string{"owner:string", "repo:string", "title:string", "head:string", "base:string"}},
		{"fork_repository", "Fork a GitHub repository to your account or specified organization", []string{"owner:string", "repo:string"}},
		{"create_branch", "Create a new branch in a GitHub repository", []string{"owner:string", "repo:string", "branch:string", "from_branch:string"}},
		{"list_commits", "Get list of commits of a branch in a GitHub repository", []string{"owner:string", "repo:string", "sha:string"}},
		{"list_issues", "List issues in a GitHub repository with filtering options", []string{"owner:string", "repo:string", "state:string"}},
		{"update_issue", "Update an existing issue in a GitHub repository", []string{"owner:string", "repo:string", "issue_number:integer", "state:string"}},
		{"add_issue_comment", "Add a comment to an existing issue", []string{"owner:string", "repo:string", "issue_number:integer", "body:string"}},
		{"search_code", "Search for code across GitHub repositories", []string{"q:string"}},
		{"search_issues", "Search for issues and pull requests across GitHub repositories", []string{"q:string"}},
		{"search_users", "Search for users on GitHub", []string{"q:string"}},
		{"get_issue", "Get details of a specific issue in a GitHub repository", []string{"owner:string", "repo:string", "issue_number:integer"}},
		{"get_pull_request", "Get details of a specific pull request", []string{"owner:string", "repo:string", "pull_number:integer"}},
		{"list_pull_requests", "List and filter repository pull requests", []string{"owner:string", "repo:string", "state:string"}},
		{"create_pull_request_review", "Create a review on a pull request", []string{"owner:string", "repo:string", "pull_number:integer", "event:string"}},
		{"merge_pull_request", "Merge a pull request", []string{"owner:string", "repo:string", "pull_number:integer", "merge_method:string"}},
		{"get_pull_request_files", "Get the list of files changed in a pull request", []string{"owner:string", "repo:string", "pull_number:integer"}},
		{"get_pull_request_status", "Get the combined status of all status checks for a pull request", []string{"owner:string", "repo:string", "pull_number:integer"}},
		{"list_workflow_runs", "List GitHub Actions workflow runs for a repository", []string{"owner:string", "repo:string", "workflow_id:string"}},
		{"rerun_workflow", "Re-run a failed GitHub Actions workflow run", []string{"owner:string", "repo:string", "run_id:integer"}},
		{"create_release", "Create a release for a tag in a GitHub repository", []string{"owner:string", "repo:string", "tag_name:string"}},
	}},
	{"jira", []entry{
		{"jira_get_issue", "Get details of a specific Jira issue including its fields, status and comments", []string{"issue_key:string"}},
		{"jira_search", "Search Jira issues using JQL (Jira Query Language)", []string{"jql:string", "limit:integer"}},
		{"jira_create_issue", "Create a new Jira issue (story, bug, task) in a project", []string{"project_key:string", "summary:string", "issue_type:string"}},
		{"jira_update_issue", "Update fields of an existing Jira issue", []string{"issue_key:string", "fields:object"}},
		{"jira_delete_issue", "Delete an existing Jira issue", []string{"issue_key:string"}},
		{"jira_add_comment", "Add a comment to a Jira issue", []string{"issue_key:string", "comment:string"}},
		{"jira_transition_issue", "Transition a Jira issue to a new status (e.g. In Progress, Done)", []string{"issue_key:string", "transition_id:string"}},
		{"jira_get_transitions", "Get the available status transitions for a Jira issue", []string{"issue_key:string"}},
		{"jira_add_worklog", "Log work time spent on a Jira issue", []string{"issue_key:string", "time_spent:string"}},
		{"jira_get_worklog", "Get the worklog entries of a Jira issue", []string{"issue_key:string"}},
		{"jira_link_issues", "Create a link between two Jira issues (blocks, relates to, duplicates)", []string{"inward_issue:string", "outward_issue:string", "link_type:string"}},
		{"jira_get_project_issues", "Get all issues of a Jira project", []string{"project_key:string"}},
		{"jira_list_projects", "List the Jira projects visible to the user", nil},
		{"jira_get_sprints_from_board", "Get the sprints of a Jira agile board", []string{"board_id:string", "state:string"}},
		{"jira_get_sprint_issues", "Get the issues planned in a sprint", []string{"sprint_id:string"}},
		{"jira_create_sprint", "Create a new sprint on a Jira board", []string{"board_id:string", "name:string"}},
		{"jira_get_user_profile", "Get the profile of a Jira user by account id or email", []string{"user_identifier:string"}},
		{"jira_download_attachments", "Download the attachments of a Jira issue to a directory", []string{"issue_key:string", "target_dir:string"}},
		{"jira_batch_create_issues", "Create many Jira issues in one request", []string{"issues:array"}},
	}},
	{"postgres", []entry{
		{"query", "Run a read-only SQL query against the PostgreSQL database", []string{"sql:string"}},
		{"execute_sql", "Execute any SQL statement (INSERT, UPDATE, DELETE, DDL) against the PostgreSQL database", []string{"sql:string"}},
		{"list_schemas", "List all schemas in the database", nil},
		{"list_tables", "List the tables of a database schema", []string{"schema:string"}},
		{"describe_table", "Describe a table: its columns, types, constraints and indexes", []string{"schema:string", "table:string"}},
		{"explain_query", "Show the execution plan (EXPLAIN ANALYZE) of a SQL query", []string{"sql:string", "analyze:boolean"}},
		{"list_indexes", "List the indexes of a table", []string{"table:string"}},
		{"analyze_db_health", "Check database health: vacuum, bloat, replication lag, connection usage, invalid indexes", nil},
		{"get_top_queries", "Report the slowest queries by total execution time from pg_stat_statements", []string{"limit:integer"}},
		{"recommend_indexes", "Recommend indexes that would speed up a workload of queries", []string{"queries:array"}},
		{"list_extensions", "List the installed PostgreSQL extensions", nil},
		{"table_row_counts", "Count the rows of every table in a schema", []string{"schema:string"}},
	}},
	{"filesystem", []entry{
		{"read_text_file", "Read the complete contents of a text file from the file system", []string{"path:string", "head:integer", "tail:integer"}},
		{"read_media_file", "Read an image or audio file and return base64 data with its MIME type", []string{"path:string"}},
		{"read_multiple_files", "Read the contents of several files at once", []string{"paths:array"}},
		{"write_file", "Create a new file or completely overwrite an existing file with new content", []string{"path:string", "content:string"}},
		{"edit_file", "Make line-based edits to a text file, returning a git-style diff", []string{"path:string", "edits:array", "dryRun:boolean"}},
		{"create_directory", "Create a new directory or make sure a directory exists, creating parents as needed", []string{"path:string"}},
		{"list_directory", "Get a detailed listing of all files and directories in a specified path", []string{"path:string"}},
		{"list_directory_with_sizes", "List files and directories with their sizes", []string{"path:string", "sortBy:string"}},
		{"directory_tree", "Get a recursive tree view of files and directories as a JSON structure", []string{"path:string"}},
		{"move_file", "Move or rename files and directories", []string{"source:string", "destination:string"}},
		{"search_files", "Recursively search for files and directories whose names match a pattern", []string{"path:string", "pattern:string"}},
		{"get_file_info", "Retrieve metadata about a file or directory: size, creation time, modification time, permissions", []string{"path:string"}},
		{"list_allowed_directories", "List the directories this server is allowed to access", nil},
	}},
	{"gdrive", []entry{
		{"gdrive_search", "Search for files in Google Drive by name or content", []string{"query:string"}},
		{"gdrive_read_file", "Read the contents of a Google Drive file, exporting Google Docs to markdown", []string{"fileId:string"}},
		{"gsheets_read", "Read cells from a Google Sheets spreadsheet range", []string{"spreadsheetId:string", "range:string"}},
		{"gsheets_update_cell", "Update a cell value in a Google Sheets spreadsheet", []string{"fileId:string", "range:string", "value:string"}},
		{"gdrive_share_file", "Share a Google Drive file with a user or group", []string{"fileId:string", "email:string", "role:string"}},
		{"gdrive_create_folder", "Create a folder in Google Drive", []string{"name:string", "parentId:string"}},
	}},
	{"linear", []entry{
		{"linear_create_issue", "Create a new Linear issue in a team", []string{"teamId:string", "title:string", "description:string", "priority:integer"}},
		{"linear_update_issue", "Update an existing Linear issue's title, state, priority or assignee", []string{"id:string", "stateId:string"}},
		{"linear_search_issues", "Search Linear issues with flexible filters", []string{"query:string", "teamId:string"}},
		{"linear_get_user_issues", "Get the issues assigned to a user", []string{"userId:string"}},
		{"linear_add_comment", "Add a comment to a Linear issue", []string{"issueId:string", "body:string"}},
		{"linear_list_teams", "List the teams of the Linear workspace", nil},
		{"linear_list_cycles", "List a team's cycles (sprints)", []string{"teamId:string"}},
		{"linear_create_project", "Create a Linear project", []string{"name:string", "teamIds:array"}},
	}},
	{"sentry", []entry{
		{"get_sentry_issue", "Retrieve and analyze a Sentry issue by ID or URL, with its stack trace", []string{"issue_id_or_url:string"}},
		{"list_project_issues", "List the unresolved error issues of a Sentry project", []string{"project_slug:string"}},
		{"get_event_details", "Get the details of one error event: stack trace, breadcrumbs, tags", []string{"event_id:string"}},
		{"resolve_issue", "Mark a Sentry issue as resolved", []string{"issue_id:string"}},
		{"search_errors", "Search error events in Sentry by message, tag or release", []string{"query:string"}},
		{"list_releases", "List the releases of a Sentry project with their crash-free rates", []string{"project_slug:string"}},
	}},
	{"notion", []entry{
		{"API-post-search", "Search pages and databases in Notion by title", []string{"query:string"}},
		{"API-get-block-children", "Retrieve the children blocks of a Notion page or block", []string{"block_id:string"}},
		{"API-patch-block-children", "Append children blocks to a Notion page", []string{"block_id:string", "children:array"}},
		{"API-retrieve-a-page", "Retrieve a Notion page and its properties", []string{"page_id:string"}},
		{"API-post-page", "Create a new page in Notion", []string{"parent:object", "properties:object"}},
		{"API-patch-page", "Update the properties of a Notion page", []string{"page_id:string", "properties:object"}},
		{"API-post-database-query", "Query a Notion database with filters and sorts", []string{"database_id:string", "filter:object"}},
		{"API-create-a-database", "Create a Notion database", []string{"parent:object", "title:array"}},
		{"API-create-a-comment", "Add a comment to a Notion page or discussion", []string{"parent:object", "rich_text:array"}},
		{"API-get-users", "List all users of the Notion workspace", nil},
	}},
	{"stripe", []entry{
		{"create_customer", "Create a customer in Stripe", []string{"name:string", "email:string"}},
		{"list_customers", "List Stripe customers", []string{"limit:integer", "email:string"}},
		{"create_product", "Create a product in Stripe", []string{"name:string", "description:string"}},
		{"create_price", "Create a price for a Stripe product", []string{"product:string", "unit_amount:integer", "currency:string"}},
		{"create_payment_link", "Create a payment link for a price", []string{"price:string", "quantity:integer"}},
		{"create_invoice", "Create an invoice for a customer", []string{"customer:string", "days_until_due:integer"}},
		{"finalize_invoice", "Finalize a draft invoice so it can be paid", []string{"invoice:string"}},
		{"retrieve_balance", "Retrieve the balance of the Stripe account", nil},
		{"create_refund", "Refund a payment intent, fully or partly", []string{"payment_intent:string", "amount:integer"}},
		{"list_subscriptions", "List the subscriptions of a customer", []string{"customer:string", "status:string"}},
		{"cancel_subscription", "Cancel a customer's subscription", []string{"subscription:string"}},
	}},
	{"kubernetes", []entry{
		{"kubectl_get", "Get or list Kubernetes resources (pods, deployments, services) by type, name and namespace", []string{"resourceType:string", "name:string", "namespace:string"}},
		{"kubectl_describe", "Describe a Kubernetes resource in detail", []string{"resourceType:string", "name:string", "namespace:string"}},
		{"kubectl_logs", "Get the logs of a pod's container", []string{"name:string", "namespace:string", "container:string", "tail:integer"}},
		{"kubectl_apply", "Apply a YAML manifest to the cluster", []string{"manifest:string", "namespace:string"}},
		{"kubectl_delete", "Delete Kubernetes resources by type and name or by manifest", []string{"resourceType:string", "name:string"}},
		{"kubectl_scale", "Scale a deployment to a number of replicas", []string{"name:string", "replicas:integer"}},
		{"kubectl_rollout", "Manage a deployment rollout: status, history, undo, restart", []string{"subCommand:string", "name:string"}},
		{"port_forward", "Forward a local port to a pod or service", []string{"resourceName:string", "localPort:integer", "targetPort:integer"}},
		{"install_helm_chart", "Install a Helm chart into the cluster", []string{"name:string", "chart:string", "namespace:string"}},
		{"list_contexts", "List the kubeconfig contexts", nil},
		{"exec_in_pod", "Execute a command inside a pod's container", []string{"name:string", "command:array"}},
	}},
	{"google-workspace", []entry{
		{"gmail_search_messages", "Search Gmail messages with Gmail query syntax", []string{"query:string", "maxResults:integer"}},
		{"gmail_get_message", "Get the full content of a Gmail message by id", []string{"messageId:string"}},
		{"gmail_send_email", "Send an email from the user's Gmail account", []string{"to:array", "subject:string", "body:string"}},
		{"gmail_draft_email", "Create a draft email in Gmail without sending it", []string{"to:array", "subject:string", "body:string"}},
		{"gmail_modify_labels", "Add or remove labels on Gmail messages (archive, mark read)", []string{"messageIds:array", "addLabelIds:array"}},
		{"calendar_list_events", "List upcoming events of a Google Calendar in a time range", []string{"calendarId:string", "timeMin:string", "timeMax:string"}},
		{"calendar_create_event", "Create a Google Calendar event, optionally inviting attendees", []string{"summary:string", "start:string", "end:string", "attendees:array"}},
		{"calendar_update_event", "Update or reschedule a Google Calendar event", []string{"eventId:string", "start:string", "end:string"}},
		{"calendar_delete_event", "Delete a Google Calendar event", []string{"eventId:string"}},
		{"calendar_find_free_time", "Find free time slots across calendars for a meeting", []string{"calendarIds:array", "duration:integer"}},
	}},
	{"puppeteer", []entry{
		{"puppeteer_navigate", "Navigate the browser to a URL", []string{"url:string"}},
		{"puppeteer_screenshot", "Take a screenshot of the current page or of an element", []string{"name:string", "selector:string", "width:integer"}},
		{"puppeteer_click", "Click an element on the page", []string{"selector:string"}},
		{"puppeteer_fill", "Fill out an input field", []string{"selector:string", "value:string"}},
		{"puppeteer_select", "Select an option in a select element", []string{"selector:string", "value:string"}},
		{"puppeteer_hover", "Hover over an element on the page", []string{"selector:string"}},
		{"puppeteer_evaluate", "Execute JavaScript in the browser console", []string{"script:string"}},
	}},
	{"memory", []entry{
		{"create_entities", "Create multiple new entities in the knowledge graph", []string{"entities:array"}},
		{"create_relations", "Create multiple new relations between entities in the knowledge graph", []string{"relations:array"}},
		{"add_observations", "Add new observations to existing entities in the knowledge graph", []string{"observations:array"}},
		{"delete_entities", "Delete entities and their relations from the knowledge graph", []string{"entityNames:array"}},
		{"read_graph", "Read the entire knowledge graph", nil},
		{"search_nodes", "Search for nodes in the knowledge graph by query", []string{"query:string"}},
		{"open_nodes", "Open specific nodes in the knowledge graph by their names", []string{"names:array"}},
	}},
	{"docker", []entry{
		{"list_containers", "List Docker containers, running or all", []string{"all:boolean"}},
		{"create_container", "Create and start a Docker container from an image", []string{"image:string", "name:string", "ports:object"}},
		{"stop_container", "Stop a running Docker container", []string{"container_id:string"}},
		{"fetch_container_logs", "Fetch the logs of a Docker container", []string{"container_id:string", "tail:integer"}},
		{"list_images", "List Docker images", nil},
		{"pull_image", "Pull a Docker image from a registry", []string{"repository:string", "tag:string"}},
		{"build_image", "Build a Docker image from a Dockerfile", []string{"path:string", "tag:string"}},
		{"remove_volume", "Remove a Docker volume", []string{"volume_name:string"}},
	}},
	{"fetch", []entry{
		{"fetch", "Fetch a URL from the internet and extract its contents as markdown", []string{"url:string", "max_length:integer", "raw:boolean"}},
	}},
	{"time", []entry{
		{"get_current_time", "Get the current time in a specific IANA timezone", []string{"timezone:string"}},
		{"convert_time", "Convert a time between timezones", []string{"source_timezone:string", "time:string", "target_timezone:string"}},
	}},
	{"git", []entry{
		{"git_status", "Shows the working tree status", []string{"repo_path:string"}},
		{"git_diff_unstaged", "Shows changes in the working directory that are not yet staged", []string{"repo_path:string"}},
		{"git_diff_staged", "Shows changes that are staged for commit", []string{"repo_path:string"}},
		{"git_diff", "Shows differences between branches or commits", []string{"repo_path:string", "target:string"}},
		{"git_commit", "Records changes to the repository", []string{"repo_path:string", "message:string"}},
		{"git_add", "Adds file contents to the staging area", []string{"repo_path:string", "files:array"}},
		{"git_reset", "Unstages all staged changes", []string{"repo_path:string"}},
		{"git_log", "Shows the commit logs", []string{"repo_path:string", "max_count:integer"}},
		{"git_create_branch", "Creates a new branch from an optional base branch", []string{"repo_path:string", "branch_name:string"}},
		{"git_checkout", "Switches branches", []string{"repo_path:string", "branch_name:string"}},
		{"git_show", "Shows the contents of a commit", []string{"repo_path:string", "revision:string"}},
		{"git_init", "Initialize a new Git repository", []string{"repo_path:string"}},
		{"git_branch", "List Git branches", []string{"repo_path:string", "branch_type:string"}},
	}},
	{"sqlite", []entry{
		{"read_query", "Execute a SELECT query on the SQLite database", []string{"query:string"}},
		{"write_query", "Execute an INSERT, UPDATE, or DELETE query on the SQLite database", []string{"query:string"}},
		{"create_table", "Create a new table in the SQLite database", []string{"query:string"}},
		{"list_tables", "List all tables in the SQLite database", nil},
		{"describe_table", "Get the schema information for a specific table", []string{"table_name:string"}},
		{"append_insight", "Add a business insight to the memo", []string{"insight:string"}},
	}},
	{"brave-search", []entry{
		{"brave_web_search", "Performs a web search using the Brave Search API, ideal for general queries, news, articles and online content", []string{"query:string", "count:integer"}},
		{"brave_local_search", "Searches for local businesses and places (restaurants, services) using Brave's Local Search API", []string{"query:string", "count:integer"}},
	}},
	{"redis", []entry{
		{"get", "Get the value of a Redis key", []string{"key:string"}},
		{"set", "Set a Redis key to a string value with an optional expiration", []string{"key:string", "value:string", "expireSeconds:integer"}},
		{"delete", "Delete one or more Redis keys", []string{"key:array"}},
		{"list", "List Redis keys matching a pattern", []string{"pattern:string"}},
	}},
	{"context7", []entry{
		{"resolve-library-id", "Resolves a package or product name to a Context7-compatible library ID", []string{"libraryName:string"}},
		{"get-library-docs", "Fetches up-to-date documentation for a library", []string{"context7CompatibleLibraryID:string", "topic:string", "tokens:integer"}},
	}},
	{"sequential-thinking", []entry{
		{"sequentialthinking", "A detailed tool for dynamic and reflective problem-solving through thoughts that can be revised", []string{"thought:string", "thoughtNumber:integer"}},
	}},
}

// schemaFor builds an input schema from "name:type" parameters; the first
// one is required.
func schemaFor(params []string) json.RawMessage {
	props := map[string]any{}
	var required []string
	for i, p := range params {
		n, typ, _ := strings.Cut(p, ":")
		prop := map[string]any{"type": typ, "description": "The " + strings.ReplaceAll(n, "_", " ")}
		if typ == "array" {
			prop["items"] = map[string]any{"type": "string"}
		}
		props[n] = prop
		if i == 0 {
			required = append(required, n)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if required != nil {
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// mcpName is the model-facing name of tool t of server srv.
func mcpName(srv, t string) string { return "mcp__" + srv + "__" + t }

// corpus returns the MCP tools of servers, deferred, in server order; with
// copies > 1 each server appears that many times (srv, srv2, srv3, ...).
func corpus(copies int) []tool.Tool {
	var out []tool.Tool
	for c := 1; c <= copies; c++ {
		for _, s := range servers {
			srv := s.name
			if c > 1 {
				srv = fmt.Sprintf("%s%d", s.name, c)
			}
			for _, e := range s.tools {
				out = append(out, &fakeTool{
					spec:  tool.Spec{Name: mcpName(srv, e.name), Description: e.desc, InputSchema: schemaFor(e.params)},
					attrs: tool.Attributes{Origin: tool.OriginMCPPrefix + srv, Deferred: true},
				})
			}
		}
	}
	return out
}

func names(tools []tool.Tool) []string {
	out := make([]string, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Spec().Name)
	}
	return out
}
