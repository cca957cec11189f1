-- wrk script of bench/webhooks.py: signed issues/labeled deliveries, each with
-- a delivery id no other request of the run uses.
--
-- HMAC-SHA256 is not in wrk's LuaJIT, so the bench signs a few distinct bodies
-- beforehand (signature over the body, as GitHub does) and names them in a
-- manifest; this script cycles through them and gives every request a fresh
-- X-GitHub-Delivery (the header is not signed, as on GitHub).
--   wrk -s webhooks.lua URL -- MANIFEST PREFIX EXPECTED_STATUS

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("thread_number", #threads)
end

local bodies, signatures = {}, {}
local prefix, expected = "", 202
local sent, next_body = 0, 0
ok, unexpected, first_unexpected = 0, 0, ""

function init(args)
  for line in io.lines(args[1]) do
    local signature, path = line:match("^(%S+) (.+)$")
    local file = assert(io.open(path, "rb"))
    table.insert(bodies, file:read("*a"))
    file:close()
    table.insert(signatures, signature)
  end
  prefix = args[2] .. "-" .. thread_number .. "-"
  expected = tonumber(args[3])
end

function request()
  sent = sent + 1
  next_body = next_body % #bodies + 1
  return wrk.format("POST", nil, {
    ["Content-Type"] = "application/json",
    ["X-GitHub-Event"] = "issues",
    ["X-GitHub-Delivery"] = prefix .. sent,
    ["X-Hub-Signature-256"] = signatures[next_body],
  }, bodies[next_body])
end

function response(status, headers, body)
  if status == expected then
    ok = ok + 1
  else
    unexpected = unexpected + 1
    if first_unexpected == "" then
      first_unexpected = status .. " " .. body
    end
  end
end

function done(summary, latency, requests)
  local answered, refused, first = 0, 0, ""
  for _, thread in ipairs(threads) do
    answered = answered + thread:get("ok")
    refused = refused + thread:get("unexpected")
    if first == "" then first = thread:get("first_unexpected") end
  end
  local errors = summary.errors
  -- One JSON line the bench parses; latencies in microseconds.
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, "ok": %d,'
      .. ' "unexpected": %d, "socket_errors": %d, "first_unexpected": "%s"}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    answered, refused, errors.connect + errors.read + errors.write + errors.timeout,
    (first:sub(1, 200):gsub('[%c"\\]', " "))))
end
