package shell

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// evalCommands are commands whose word expansions evaluate a value the
// analysis cannot see as code (issue 10, item 2), each with what the
// reason must say and a command the analysis must hand on to the rules
// ("" for none). The payload touches PWNED, so that TestEvaluationOracle
// can check each one does run code in bash.
var evalCommands = []struct {
	command, reason, inner string
}{
	// the commands
	{`printf -v 'a[$(touch PWNED)]' %s 1`, "printf -v (the subscript of a[$(touch PWNED)])", "touch PWNED"},
	{`read 'a[$(touch PWNED)]' <<< 1`, "read (the subscript", "touch PWNED"},
	{`test -v 'a[$(touch PWNED)]'`, "test -v", "touch PWNED"},
	{`[ -v 'a[$(touch PWNED)]' ]`, "[ -v", "touch PWNED"},
	{`let 'a[$(touch PWNED)]=1'`, "let evaluates", "touch PWNED"},
	{`x='a[$(touch PWNED)]'; echo $(( x ))`, "$(( )) evaluates the value of x", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; [[ $v -eq 0 ]]`, "[[ -eq ]] evaluates the value of v", "touch PWNED"},
	{`x='$(touch PWNED)'; echo "${x@P}"`, "${x@P} evaluates the value of x", "touch PWNED"},
	{`a='a[$(touch PWNED)]'; echo ${b[a]}`, "the subscript of b[…] evaluates the value of a", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; echo ${v:v}`, "${v:offset:length} evaluates the value of v", "touch PWNED"},
	// arithmetic contexts
	{`v='a[$(touch PWNED)]'; echo $(( $v ))`, "$(( )) evaluates the value of v", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; echo $[v]`, "$(( ))", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; (( v ))`, "(( )) evaluates the value of v", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; let v`, "let", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; for ((i=v;i<0;i++)); do :; done`, "for (( ))", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; [[ v -eq 0 ]]`, "[[ -eq ]]", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; [[ 1 -lt 2 && $v -gt 0 ]]`, "[[ -gt ]]", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; echo $(( ${v:-0} ))`, "$(( ))", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; x=$(( 1 + $(echo "$v") ))`, "the output of a command", ""},
	{`v='a[$(touch PWNED)]'; case 1 in $((v))) ;; esac`, "$(( ))", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; declare -i x; x=$v`, "declared -i", ""},
	{`v='a[$(touch PWNED)]'; declare -i x=$v`, "declared -i", ""},
	{`[[ 'a[$(touch PWNED)]' -eq 0 ]]`, "[[ -eq ]] evaluates", "touch PWNED"},
	// subscripts
	{`v='a[$(touch PWNED)]'; b[v]=1`, "the subscript of b[…]", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; a=([$v]=1)`, "the subscript of a[…]", "touch PWNED"},
	{`a=(1); v='a[$(touch PWNED)]'; echo ${a[v]}`, "the subscript of a[…]", "touch PWNED"},
	{`a=(1); v='a[$(touch PWNED)]'; echo ${#a[v]}`, "the subscript of a[…]", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; echo ${v[v]}`, "the subscript of v[…]", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; echo ${v:0:v}`, "${v:offset:length}", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; a[0]=1; echo ${a[@]:0:v}`, "${a:offset:length}", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; x=${@:v}`, "${@:offset:length}", "touch PWNED"},
	// names that builtins assign, test or remove
	{`a=(1); unset 'a[$(touch PWNED)]'`, "unset", "touch PWNED"},
	{`declare 'a[$(touch PWNED)]=1'`, "declare", "touch PWNED"},
	{`typeset 'a[$(touch PWNED)]=1'`, "typeset", "touch PWNED"},
	{`f() { local 'a[$(touch PWNED)]=1'; }; f`, "local", "touch PWNED"},
	{`sleep 0 & wait -n -p 'a[$(touch PWNED)]'`, "wait -p", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; [[ -v $v ]]`, "[[ -v ]] evaluates the value of v", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; [ -v "$v" ]`, "[ -v evaluates the value of v", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; echo ${!v}`, "${!v} evaluates the value of v", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; echo ${!v:-x}`, "${!v}", "touch PWNED"},
	{`declare -n r='a[$(touch PWNED)]'; echo $r`, "the nameref r", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; declare -n r=v; echo $((r))`, "$(( ))", "touch PWNED"},
	{`v='a[$(touch PWNED)]'; declare -n r; r=$v; echo $r`, "r is a nameref", ""},
	{`builtin printf -v 'a[$(touch PWNED)]' %s 1`, "printf -v", "touch PWNED"},
	{`command read 'a[$(touch PWNED)]' <<< 1`, "read", "touch PWNED"},
	// code in strings
	{`x='\044(touch PWNED)'; echo "${x@P}"`, "${x@P}", ""},
	{`mapfile -C 'touch PWNED #' -c 1 arr <<< x`, "mapfile -C runs", "touch PWNED"},
	{`PS4='$(touch PWNED)'; set -x; :`, "PS4 is given", "touch PWNED"},
	// names given to builtins only known when they run
	{`n='a[$(touch PWNED)]'; printf -v "$n" %s 1`, "printf -v assigns a variable whose name is only known", ""},
	{`n='a[$(touch PWNED)]'; read "$n" <<< 1`, "read assigns a variable whose name is only known", ""},
}

func TestAccessEvaluation(t *testing.T) {
	env, _ := accessEnv(t)
	b := &Bash{}
	for _, tc := range evalCommands {
		acc := bashAccess(t, env, tc.command)
		raw, _ := json.Marshal(map[string]any{"command": tc.command})
		if b.Attributes(raw).ReadOnly {
			t.Errorf("%s: read-only", tc.command)
		}
		if !strings.Contains(acc.AlwaysAsk, tc.reason) {
			t.Errorf("%s: AlwaysAsk = %q, want it to say %q", tc.command, acc.AlwaysAsk, tc.reason)
		}
		if tc.inner != "" && !slices.Contains(acc.Commands, tc.inner) {
			t.Errorf("%s: Commands = %q, want %q among them", tc.command, acc.Commands, tc.inner)
		}
	}
}

// TestAccessEvaluationSafe checks the uses of values the analysis sees:
// they stay read-only (when the commands are) and are not asked.
func TestAccessEvaluationSafe(t *testing.T) {
	env, _ := accessEnv(t)
	b := &Bash{}
	for _, tc := range []struct {
		command  string
		readOnly bool
	}{
		{`echo $((1+2))`, true},
		{`echo $(( (3 * 4) % 5 )) $[2**3] $((0x1f + 16#ff + 2#101))`, true},
		{`x=3; echo $((x+1))`, true},
		{`x=3 y=4; echo $(( x * y )) $(( $x + ${y} ))`, true},
		{`export n=5; echo $((n - 1))`, true},
		{`for i in 1 2 3; do echo $((i*2)); done`, true},
		{`for i in {1..5}; do echo $((i + 1)); done`, true},
		{`for ((i=0; i<3; i++)); do echo $i; done`, true},
		{`i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i`, true},
		{`(( 1 < 2 )) && echo yes`, true},
		{`[[ $# -eq 0 && $? -ne 1 ]]`, true},
		{`echo $(( RANDOM % 6 )) $(( SECONDS + EPOCHSECONDS ))`, true},
		{`a=(1 2 3); echo ${a[0]} ${a[-1]} ${a[@]} ${#a[@]} ${a[*]:1:2} $(( a[1] + 1 ))`, true},
		{`s=hello; echo ${s:1:3} ${s: -2} ${#s}`, true},
		{`echo $(( ${#HOME} + 1 ))`, true},
		{`declare -A m=([k]=v); m[x]=y; echo ${m[k]} ${m[$HOME]}`, false}, // declare with options is not read-only (classify.go)
		{`let x=1+2 'y = 3'`, true},
		{`printf -v out '%s' hi; echo "$out"`, true},
		{`read -r line < README.md; echo "$line"`, true},
		{`test -v HOME && [ -v PATH ] && [[ -v x ]]`, true},
		{`x=HOME; echo ${!x} ${!HO*}`, true},
		{`[ "$x" -eq 1 ]`, true}, // test and [ read -eq's operands as integers
		{`printf '%d\n' "$x"`, true},
		{`unset x 'a[1]'`, false},
		{`x='$(rm x)'; echo "$x" "${x@Q}" "${x@E}"`, true}, // @Q and @E run nothing
		{`PS4='+ '; set -x; ls`, false},                    // PS4 is a dangerous variable (classify.go)
		{`echo '$((x))'; echo "a[$(date)]"`, true},
	} {
		acc := bashAccess(t, env, tc.command)
		raw, _ := json.Marshal(map[string]any{"command": tc.command})
		if got := b.Attributes(raw).ReadOnly; got != tc.readOnly {
			t.Errorf("%s: read-only %v, want %v", tc.command, got, tc.readOnly)
		}
		if acc.AlwaysAsk != "" {
			t.Errorf("%s: AlwaysAsk = %q, want none", tc.command, acc.AlwaysAsk)
		}
	}
}

// TestAccessEvaluationUnseen checks uses of values the analysis does not
// see, though nothing in the command itself is code: they ask too.
func TestAccessEvaluationUnseen(t *testing.T) {
	env, _ := accessEnv(t)
	for _, tc := range []struct{ command, reason string }{
		{`echo $((x))`, "the value of x as an arithmetic expression, and that value is not a literal"},
		{`echo $(( $1 + 1 ))`, "the value of 1"},
		{`echo $(( $(wc -l < README.md) + 1 ))`, "the output of a command"},
		{`echo $((x)); x=3`, "the value of x"},                        // used before it is set
		{`f() { echo $((x)); }; x=3; f`, "the value of x"},            // the body comes first
		{`true && x=3; echo $((x))`, "the value of x"},                // not surely set
		{`(x=3); echo $((x))`, "the value of x"},                      // set in a subshell
		{`x=3 true; echo $((x))`, "the value of x"},                   // set for true only
		{`x=3; read x; echo $((x))`, "the value of x"},                // read replaces it
		{`x=3; x+=1; echo $((x))`, "the value of x"},                  // appended to
		{`x=y; y=1; echo $((x))`, `the value of x ("y")`},             // values name nothing
		{`for f in *; do echo $((f)); done`, "the value of f"},        // file names
		{`for i in $(seq 3); do echo $((i)); done`, "the value of i"}, // a command's output
		{`_=1; echo $((_))`, "the value of _"},                        // bash sets $_
		{`x=3; declare -n r=y; echo $((x))`, "the value of x"},        // a nameref may change x
		{`echo ${s:$n}`, "the value of n"},
		{`echo ${a[i]}`, "the value of i"},
		{`echo ${!v}`, "the value of v as a variable name"},
		{`echo "${p@P}"`, "the value of p as a prompt string"},
		{`let "b$x"`, "a variable name built from an expansion"},
		{`x=1; echo $(( ${x/1/y} ))`, "a transformed expansion"},
		{`printf -v "$n" %s 1`, "printf -v assigns a variable whose name is only known"},
		{`declare "$d"`, "declare is given a word only known"},
		{`mapfile -C "$cb" arr < README.md`, "mapfile -C runs a command only known"},
		{`trap "$t" EXIT`, "trap sets a command only known"},
	} {
		if acc := bashAccess(t, env, tc.command); !strings.Contains(acc.AlwaysAsk, tc.reason) {
			t.Errorf("%s: AlwaysAsk = %q, want it to say %q", tc.command, acc.AlwaysAsk, tc.reason)
		}
	}
}

// TestEvaluationOracle runs each command of evalCommands in bash, in an
// empty directory, and checks that it did run code: the analysis asks for
// real, not for what bash would never do.
func TestEvaluationOracle(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, tc := range evalCommands {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, bash, "-c", tc.command)
		cmd.Dir = dir
		_ = cmd.Run() // many fail once the payload ran
		cancel()
		if _, err := os.Stat(filepath.Join(dir, "PWNED")); err != nil {
			t.Errorf("%s: bash ran no code", tc.command)
		}
	}
}
