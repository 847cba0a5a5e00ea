// Server-sent events over fetch(): EventSource cannot send an Authorization header
// or a POST body, so the stream is parsed here, following the WHATWG rules
// (fields event/data/id, ':' comments, CRLF/LF/CR line ends, blank line dispatches).

export function createParser(onEvent) {
  let buffer = '';
  let type = '';
  let data = [];
  let id = ''; // the last event id, kept across events as the spec says

  function line(text) {
    if (text === '') {
      if (data.length) onEvent({ event: type || 'message', data: data.join('\n'), ...(id && { id }) });
      type = '';
      data = [];
      return;
    }
    if (text.startsWith(':')) return; // comment, e.g. ": ping"
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) id = value;
  }

  return {
    push(chunk) {
      buffer += chunk;
      for (;;) {
        const match = /\r\n|\n|\r/.exec(buffer);
        // A lone trailing CR may be the first half of a CRLF: wait for more.
        if (!match || (match[0] === '\r' && match.index === buffer.length - 1)) break;
        line(buffer.slice(0, match.index));
        buffer = buffer.slice(match.index + match[0].length);
      }
    },
    end() {
      // The spec drops an event that the stream cut before its blank line.
      buffer = '';
      type = '';
      data = [];
    },
  };
}

/** Yield {event, data, id} objects (data JSON-parsed) from a fetch Response body. */
export async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const queue = [];
  const parser = createParser((event) => queue.push(event));
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      parser.push(value);
      while (queue.length) {
        const { event, data, id } = queue.shift();
        yield { event, data: JSON.parse(data), id };
      }
    }
  } finally {
    parser.end();
    reader.cancel().catch(() => {}); // the consumer stopped early: release the stream
  }
}
