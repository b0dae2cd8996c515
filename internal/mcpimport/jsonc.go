package mcpimport

// jsoncToJSON turns JSON with comments and trailing commas (what VS Code
// and opencode accept) into JSON: comments become spaces, so that a
// decoding error's offset still points into the file, and a comma before
// } or ] is dropped.
func jsoncToJSON(src []byte) []byte {
	out := make([]byte, 0, len(src))
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inString:
			out = append(out, c)
			if c == '\\' && i+1 < len(src) {
				i++
				out = append(out, src[i])
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			out = append(out, c)
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				out = append(out, ' ')
				i++
			}
			i--
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			out = append(out, ' ', ' ')
			i += 2
			for i < len(src) && !(src[i] == '*' && i+1 < len(src) && src[i+1] == '/') {
				if src[i] == '\n' {
					out = append(out, '\n')
				} else {
					out = append(out, ' ')
				}
				i++
			}
			out = append(out, ' ', ' ')
			i++
		case c == '}' || c == ']':
			// Blank out a trailing comma before it.
			for j := len(out) - 1; j >= 0; j-- {
				if out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r' {
					continue
				}
				if out[j] == ',' {
					out[j] = ' '
				}
				break
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
