-- The KernelEvo flow in a real, headless Neovim (0.7+) through vim.lsp, step by step.
-- Driven by tests/editors/test_neovim.py, which passes its settings in the environment and
-- reads back the JSON this script writes. Each step records what a person would see.
local cfg = vim.fn.json_decode(os.getenv("KERNELEVO_NVIM_FLOW"))
local steps, seen = {}, { messages = {}, progress = {}, asked = {}, shown_documents = 0 }

local function record(name, value) steps[#steps + 1] = { step = name, value = value } end

local function finish(failure)
  if failure then record("failure", failure) end
  local fh = io.open(cfg.out, "w")
  fh:write(vim.fn.json_encode({ steps = steps, seen = seen }))
  fh:close()
  vim.cmd("qa!")
end

-- Nothing may keep the editor alive past the test's budget.
vim.defer_fn(function() finish("timed out inside Neovim") end, cfg.timeout_ms)

vim.lsp.handlers["window/showMessage"] = function(_, result)
  seen.messages[#seen.messages + 1] = result.message
end
vim.lsp.handlers["window/showMessageRequest"] = function(_, result)
  seen.asked[#seen.asked + 1] = result.message
  return { title = cfg.answer or "Apply" }
end
local progress = vim.lsp.handlers["$/progress"]
vim.lsp.handlers["$/progress"] = function(err, result, ctx, config)
  if result and result.value and result.value.message then
    seen.progress[#seen.progress + 1] = result.value.message
  end
  return progress(err, result, ctx, config)
end

local bufnr = vim.api.nvim_get_current_buf()
local uri = vim.uri_from_bufnr(bufnr)
local original = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
local client_id, client

-- Start the server and attach it to the buffer; true once it is initialized.
local function start_server()
  client_id = vim.lsp.start_client({
    name = "kernelevo",
    cmd = cfg.cmd,
    cmd_env = cfg.env,
    root_dir = cfg.root,
    init_options = { kernelevo = cfg.settings },
  })
  vim.lsp.buf_attach_client(bufnr, client_id)
  return vim.wait(60000, function()
    client = vim.lsp.get_client_by_id(client_id)
    return client ~= nil and client.initialized
  end, 100)
end
if not start_server() then return finish("the server did not initialize") end

local function request(method, params, timeout)
  local got = vim.lsp.buf_request_sync(bufnr, method, params, timeout or 60000)
  local answer = got and got[client_id]
  if not answer then return nil, "no answer to " .. method end
  if answer.err then return nil, answer.err.message end
  return answer.result
end

-- The lenses of our target only (a file holds several targets), from the running server
-- (Neovim 0.7 keeps showing a stopped client's lenses beside the new client's).
local function target_lenses()
  local out = {}
  local got = vim.lsp.buf_request_sync(bufnr, "textDocument/codeLens", { textDocument = { uri = uri } }, 10000)
  local answer = got and got[client_id]
  for _, lens in ipairs(answer and answer.result or {}) do
    local args = lens.command and lens.command.arguments
    if args and args[2] == cfg.target_id then out[#out + 1] = lens end
  end
  return out
end

local function lens_titles()
  vim.lsp.codelens.refresh()
  vim.wait(3000, function() return #target_lenses() > 0 end, 50)
  local titles = {}
  for _, lens in ipairs(target_lenses()) do titles[#titles + 1] = lens.command.title end
  return titles
end

local function wait_lens(pattern, timeout)
  local titles = {}
  vim.wait(timeout or 20000, function()
    titles = lens_titles()
    for _, t in ipairs(titles) do
      if t:find(pattern, 1, true) then return true end
    end
    return false
  end, 300)
  return titles
end

local function lens_command(pattern)
  for _, lens in ipairs(target_lenses()) do
    if lens.command.title:find(pattern, 1, true) then return lens.command end
  end
end

local target_line = cfg.target_line
local position = { line = target_line, character = cfg.target_character }

-- 1. Lenses on the target.
record("lenses", wait_lens("Optimize with KernelEvo", 30000))

-- 2. Hover on the target's name.
local hover, err = request("textDocument/hover", { textDocument = { uri = uri }, position = position })
record("hover", hover and hover.contents.value or ("error: " .. tostring(err)))

-- 3. Code actions at the target.
local function actions()
  local got = request("textDocument/codeAction", {
    textDocument = { uri = uri },
    range = { start = position, ["end"] = position },
    context = { diagnostics = {} },
  }) or {}
  return got
end
local titles = {}
local optimize
for _, a in ipairs(actions()) do
  titles[#titles + 1] = a.title
  if a.command and a.command.command == "kernelevo.optimize" then optimize = a.command end
end
record("code_actions", titles)
if not optimize then return finish("no Optimize code action") end

-- 4. Optimize (the code action's command), with progress, until the job ends.
local started = request("workspace/executeCommand", { command = optimize.command, arguments = optimize.arguments })
record("optimize_started", started)
local jobs
vim.wait(cfg.search_timeout_ms, function()
  jobs = request("kernelevo/jobs", vim.NIL)
  return jobs and jobs[1] and jobs[1].state ~= "running" and jobs[1].state ~= "queued"
end, 500)
record("job", jobs and jobs[1])
record("progress", seen.progress)
record("end_messages", seen.messages)

-- 5. The result's lenses.
record("result_lenses", wait_lens("Show diff", 20000))

-- 6. Show diff: no showDocument in 0.7, so the server names the diff file; open and read it.
local show = lens_command("Show diff")
if not show then return finish("no Show diff lens") end
local diff = request("workspace/executeCommand", { command = show.command, arguments = show.arguments })
record("show_diff_message", seen.messages[#seen.messages])
if diff and diff.diffUri then
  local path = vim.uri_to_fname(diff.diffUri)
  vim.cmd("split " .. vim.fn.fnameescape(path))
  record("diff_buffer", vim.api.nvim_buf_get_lines(0, 0, -1, false))
  vim.cmd("close")
  vim.api.nvim_set_current_buf(bufnr)
end

-- 7. Apply through the code action: the server asks first (showMessageRequest), then edits the buffer.
local apply
titles = {}
for _, a in ipairs(actions()) do
  titles[#titles + 1] = a.title
  if a.command and a.command.command == "kernelevo.apply" then apply = a.command end
end
record("apply_actions", titles)
if not apply then return finish("no Apply code action") end
local applied = request("workspace/executeCommand", { command = apply.command, arguments = apply.arguments }, 120000)
record("apply_answer", applied)
record("asked", seen.asked)
local after = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
record("buffer_after_apply", after)
record("modified_after_apply", vim.api.nvim_buf_get_option(bufnr, "modified"))

-- 8. The lenses say "applied".
record("lenses_after_apply", wait_lens("applied", 20000))

-- 9. A new server process still reads the target as applied (from its text).
local function exists(path) return vim.loop.fs_stat(path) ~= nil end
local created = {}
for _, path in ipairs(cfg.created) do created[#created + 1] = { path = path, exists = exists(path) } end
record("created_after_apply", created)
vim.lsp.stop_client(client_id)
vim.wait(10000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 100)
if not start_server() then return finish("the restarted server did not initialize") end
record("lenses_after_restart", wait_lens("applied", 30000))

-- 10. Undo restores the original text; the files Apply created are gone; Apply is offered again.
vim.api.nvim_set_current_buf(bufnr)
local undos = 0
while undos < 10 and table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") ~= original do
  vim.cmd("silent! undo")
  undos = undos + 1
end
record("undos", undos)
record("buffer_after_undo_is_original",
  table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") == original)
record("lenses_after_undo", wait_lens("Apply", 20000))
vim.wait(20000, function()
  for _, path in ipairs(cfg.created) do
    if exists(path) then return false end
  end
  return true
end, 200)
local left = {}
for _, path in ipairs(cfg.created) do
  if exists(path) then left[#left + 1] = path end
end
record("created_left_after_undo", left)
record("messages_after_undo", seen.messages)

-- 11. A target without example inputs: the search says why; a code action records the
-- engine's best guess as the `# kernelevo: inputs` comment it reads; saved, the search starts.
vim.cmd("edit " .. vim.fn.fnameescape(cfg.inputs_file))
local b2 = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(b2, client_id)
local u2 = vim.uri_from_bufnr(b2)
local function request_in(buf, method, params, timeout)
  local got = vim.lsp.buf_request_sync(buf, method, params, timeout or 60000)
  local answer = got and got[client_id]
  if not answer then return nil, "no answer to " .. method end
  if answer.err then return nil, answer.err.message end
  return answer.result
end
local function job_of(target)
  local found
  for _, j in ipairs(request_in(b2, "kernelevo/jobs", vim.NIL) or {}) do
    if j.targetId == target and (found == nil or j.startedAt > found.startedAt) then found = j end
  end
  return found
end
local function run_optimize()
  local before = job_of(cfg.inputs_target)
  request_in(b2, "workspace/executeCommand",
    { command = "kernelevo.optimize", arguments = { u2, cfg.inputs_target, "triton" } })
  local job
  vim.wait(120000, function()
    job = job_of(cfg.inputs_target)
    return job and (before == nil or job.jobId ~= before.jobId) and job.state ~= "running" and job.state ~= "queued"
  end, 500)
  return job
end
vim.wait(20000, function() return #(request_in(b2, "textDocument/codeLens", { textDocument = { uri = u2 } }) or {}) > 0 end, 300)
local failed = run_optimize()
record("inputs_job", failed)
local record_action
local titles2 = {}
local pos2 = { line = cfg.inputs_line, character = 4 }
for _, a in ipairs(request_in(b2, "textDocument/codeAction", {
  textDocument = { uri = u2 }, range = { start = pos2, ["end"] = pos2 }, context = { diagnostics = {} },
}) or {}) do
  titles2[#titles2 + 1] = a.title
  if a.command and a.command.command == "kernelevo.recordInputs" then record_action = a.command end
end
record("inputs_actions", titles2)
if not record_action then return finish("no Record example inputs code action") end
local recorded = request_in(b2, "workspace/executeCommand",
  { command = record_action.command, arguments = record_action.arguments })
record("inputs_recorded", recorded)
record("inputs_buffer", vim.api.nvim_buf_get_lines(b2, 0, -1, false))
vim.cmd("silent write")
vim.wait(3000, function() return false end, 100)
local again_before = job_of(cfg.inputs_target)
request_in(b2, "workspace/executeCommand",
  { command = "kernelevo.optimize", arguments = { u2, cfg.inputs_target, "triton" } })
local task_file
vim.wait(120000, function()
  local found = vim.fn.glob(cfg.root .. "/.kernelevo/tasks/scale__scale_rows__*.py", false, true)
  task_file = found[1]
  local j = job_of(cfg.inputs_target)
  return task_file ~= nil or (j and j.jobId ~= again_before.jobId and j.state == "failed")
end, 500)
record("inputs_task_header", task_file and vim.fn.readfile(task_file, "", 12) or {})
local running = job_of(cfg.inputs_target)
if running and (running.state == "running" or running.state == "queued") then
  request_in(b2, "kernelevo/cancel", { jobId = running.jobId })
end

-- 12. A stored run kept the library GEMM and had a TF32-level candidate: the hover says both; a
-- code action writes the `# kernelevo: precision = tf32` comment the engine turns into ALLOW_TF32.
vim.cmd("edit " .. vim.fn.fnameescape(cfg.tf32_file))
local b3 = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(b3, client_id)
local u3 = vim.uri_from_bufnr(b3)
local pos3 = { line = cfg.tf32_line, character = 5 }
vim.wait(20000, function()
  return #(request_in(b3, "textDocument/codeLens", { textDocument = { uri = u3 } }) or {}) > 1
end, 300)
local lenses3 = {}
for _, l in ipairs(request_in(b3, "textDocument/codeLens", { textDocument = { uri = u3 } }) or {}) do
  lenses3[#lenses3 + 1] = l.command and l.command.title
end
record("tf32_lenses", lenses3)
local hover3 = request_in(b3, "textDocument/hover", { textDocument = { uri = u3 }, position = pos3 })
record("tf32_hover", hover3 and hover3.contents.value or "")
local accept
local titles3 = {}
for _, a in ipairs(request_in(b3, "textDocument/codeAction", {
  textDocument = { uri = u3 }, range = { start = pos3, ["end"] = pos3 }, context = { diagnostics = {} },
}) or {}) do
  titles3[#titles3 + 1] = a.title
  if a.command and a.command.command == "kernelevo.acceptPrecision" then accept = a.command end
end
record("tf32_actions", titles3)
if not accept then return finish("no Accept TF32 code action") end
record("tf32_accepted", request_in(b3, "workspace/executeCommand",
  { command = accept.command, arguments = accept.arguments }))
record("tf32_buffer", vim.api.nvim_buf_get_lines(b3, 0, -1, false))
finish(nil)
