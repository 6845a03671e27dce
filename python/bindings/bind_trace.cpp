// triescope.TraceWriter (core/trace/external_trace.h), triescope.Trace (core/trace/trace_replay.h).
#include <memory>

#include <filesystem>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "python/bindings/bindings.h"
#include "python/bindings/py_convert.h"
#include "core/common/error.h"
#include "core/trace/external_trace.h"
#include "core/trace/keyframe_record.h"
#include "core/trace/trace_replay.h"

namespace triescope::py {

namespace {

std::vector<ExternalNode> added_nodes(pyb::handle obj, const std::string& name) {
  std::vector<ExternalNode> out;
  if (obj.is_none()) return out;
  const pyb::object o = numpy_of(obj);
  if (pyb::isinstance<pyb::array>(o)) {
    const auto rows = int_rows(o, name);
    for (size_t i = 0; i < rows.size(); ++i) {
      TS_CHECK(rows[i].size() == 3, name << ": expected 3 columns (parent, token, slot), got " << rows[i].size());
      const std::string at = name + "[" + std::to_string(i) + "]";
      out.push_back({int32_checked(rows[i][0], at + ".parent"), int32_checked(rows[i][1], at + ".token"), int32_checked(rows[i][2], at + ".slot"),
                     0.0});
    }
    return out;
  }
  if (pyb::isinstance<pyb::str>(o) || !pyb::isinstance<pyb::sequence>(o))
    throw pyb::type_error(name + ": expected a list of (parent, token, slot[, logprob]) tuples");
  size_t i = 0;
  for (auto item : o) {
    const std::string at = name + "[" + std::to_string(i++) + "]";
    if (pyb::isinstance<pyb::str>(item) || !pyb::isinstance<pyb::sequence>(item))
      throw pyb::type_error(at + ": expected a (parent, token, slot[, logprob]) tuple");
    const auto seq = item.cast<pyb::sequence>();
    TS_CHECK(seq.size() == 3 || seq.size() == 4, at << ": expected (parent, token, slot[, logprob]), got " << seq.size() << " entries");
    pyb::list ints;
    for (size_t k = 0; k < 3; ++k) ints.append(seq[k]);
    const auto v = int32_vector(ints, at);
    double lp = 0.0;
    if (seq.size() == 4) {
      if (!pyb::isinstance<pyb::float_>(seq[3]) && !pyb::isinstance<pyb::int_>(seq[3]))
        throw pyb::type_error(at + ": logprob must be a number");
      lp = seq[3].cast<double>();
    }
    out.push_back({v[0], v[1], v[2], lp});
  }
  return out;
}

std::vector<std::pair<int32_t, std::string>> status_changes(pyb::handle obj, const std::string& name) {
  std::vector<std::pair<int32_t, std::string>> out;
  if (obj.is_none()) return out;
  pyb::object items = pyb::isinstance<pyb::dict>(obj) ? pyb::list(obj.attr("items")()) : pyb::reinterpret_borrow<pyb::object>(obj);
  if (pyb::isinstance<pyb::str>(items) || !pyb::isinstance<pyb::sequence>(items))
    throw pyb::type_error(name + ": expected {node: status} or a list of (node, status) pairs");
  size_t i = 0;
  for (auto item : items) {
    const std::string at = name + "[" + std::to_string(i++) + "]";
    if (!pyb::isinstance<pyb::sequence>(item) || pyb::len(item) != 2) throw pyb::type_error(at + ": expected a (node, status) pair");
    const auto pair = item.cast<pyb::sequence>();
    pyb::list node;
    node.append(pair[0]);
    if (!pyb::isinstance<pyb::str>(pair[1])) throw pyb::type_error(at + ": status must be a string (live, pruned, finished, accepted, rejected)");
    out.emplace_back(int32_vector(node, at)[0], pair[1].cast<std::string>());
  }
  return out;
}

std::vector<std::pair<int32_t, int32_t>> gc_moves(pyb::handle obj, const std::string& name) {
  std::vector<std::pair<int32_t, int32_t>> out;
  const auto rows = int_rows(obj, name);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    TS_CHECK(r.size() == 2, name << ": expected (old slot, new slot) pairs, got a row of " << r.size());
    const std::string at = name + "[" + std::to_string(i) + "]";
    out.emplace_back(int32_checked(r[0], at + ".old"), int32_checked(r[1], at + ".new"));
  }
  return out;
}

// Trace.records: the records read one at a time through the trace's index
// (a streamed file: each parsed when asked for, none kept), as a sequence.
struct RecordsView {
  std::shared_ptr<const TraceReplay> trace;
  size_t size() const { return trace->records_view().size(); }
  pyb::object at(size_t i) const {
    nlohmann::json scratch;
    return from_json(trace->records_view().at(i, scratch));
  }
};

struct RecordsIterator {
  RecordsView records;
  size_t next = 0;
};

// Trace.steps: 0 .. last (a trace has every step number once, in order),
// a sequence equal to the list of them.
struct StepsView {
  int32_t count = 0;
};

size_t sequence_index(pyb::ssize_t i, size_t size, const char* what) {
  const pyb::ssize_t n = static_cast<pyb::ssize_t>(size);
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw pyb::index_error(std::string(what) + " index out of range");
  return static_cast<size_t>(i);
}

bool steps_equal(const StepsView& s, const pyb::object& other) {
  if (pyb::isinstance<StepsView>(other)) return other.cast<StepsView>().count == s.count;
  if (pyb::isinstance<pyb::str>(other) || !pyb::isinstance<pyb::sequence>(other)) return false;
  if (pyb::len(other) != static_cast<size_t>(s.count)) return false;
  int32_t want = 0;
  for (auto item : other)
    if (!pyb::isinstance<pyb::int_>(item) || pyb::isinstance<pyb::bool_>(item) || !item.equal(pyb::int_(want++))) return false;
  return true;
}

void bind_trace_sequences(pyb::class_<TraceReplay, std::shared_ptr<TraceReplay>>& trace) {
  pyb::class_<RecordsView>(trace, "Records", "Trace.records: a sequence of the records (dicts), each read from the file "
                                            "when indexed or iterated; none is kept.")
      .def("__len__", &RecordsView::size)
      .def("__getitem__", [](const RecordsView& r, pyb::ssize_t i) { return r.at(sequence_index(i, r.size(), "records")); })
      .def("__getitem__", [](const RecordsView& r, const pyb::slice& sl) {
        size_t start = 0, stop = 0, step = 0, n = 0;
        if (!sl.compute(r.size(), &start, &stop, &step, &n)) throw pyb::error_already_set();
        pyb::list out;
        for (size_t k = 0; k < n; ++k, start += step) out.append(r.at(start));
        return out;
      })
      .def("__iter__", [](const RecordsView& r) { return RecordsIterator{r, 0}; })
      .def("__repr__", [](const RecordsView& r) { return "<triescope.Trace.Records: " + std::to_string(r.size()) + " records>"; });
  pyb::class_<RecordsIterator>(trace, "RecordsIterator", "Iterates Trace.records, one record read at a time.")
      .def("__iter__", [](RecordsIterator& it) -> RecordsIterator& { return it; }, pyb::return_value_policy::reference_internal)
      .def("__next__", [](RecordsIterator& it) {
        if (it.next >= it.records.size()) throw pyb::stop_iteration();
        return it.records.at(it.next++);
      });
  pyb::class_<StepsView>(trace, "Steps", "Trace.steps: the step numbers 0 .. last as a sequence (equal to the list of them), "
                                        "not a list a step.")
      .def("__len__", [](const StepsView& s) { return static_cast<size_t>(s.count); })
      .def("__getitem__", [](const StepsView& s, pyb::ssize_t i) {
        return static_cast<int32_t>(sequence_index(i, static_cast<size_t>(s.count), "steps"));
      })
      .def("__getitem__", [](const StepsView& s, const pyb::slice& sl) { return pyb::list(pyb::module_::import("builtins").attr("range")(s.count))[sl]; })
      .def("__iter__", [](const StepsView& s) { return pyb::iter(pyb::module_::import("builtins").attr("range")(s.count)); })
      .def("__contains__", [](const StepsView& s, const pyb::object& x) {
        return pyb::isinstance<pyb::int_>(x) && x.cast<int64_t>() >= 0 && x.cast<int64_t>() < s.count;
      })
      .def("__eq__", [](const StepsView& s, const pyb::object& other) { return steps_equal(s, other); })
      .def("__repr__", [](const StepsView& s) {
        return "<triescope.Trace.Steps: " + (s.count == 0 ? std::string("none") : "0.." + std::to_string(s.count - 1)) + ">";
      });
}

pyb::array mask_array(const BitMask& m) {
  pyb::array_t<bool> a({static_cast<pyb::ssize_t>(m.rows), static_cast<pyb::ssize_t>(m.cols)});
  auto w = a.mutable_unchecked<2>();
  for (int32_t r = 0; r < m.rows; ++r)
    for (int32_t c = 0; c < m.cols; ++c) w(r, c) = m.test(r, c);
  return a;
}

void bind_trace_reader(pyb::module_& m) {
  pyb::class_<TreeNode>(m, "Node", "A node of the token tree: id, parent (-1: root), token, depth (= position id), "
                                   "slot (-1: none), logprob, status.")
      .def_readonly("id", &TreeNode::id)
      .def_readonly("parent", &TreeNode::parent)
      .def_readonly("token", &TreeNode::token)
      .def_readonly("depth", &TreeNode::depth)
      .def_readonly("slot", &TreeNode::slot)
      .def_readonly("logprob", &TreeNode::logprob)
      .def_property_readonly("status", [](const TreeNode& n) { return std::string(node_status_name(n.status)); })
      .def("__repr__", [](const TreeNode& n) {
        return "Node(id=" + std::to_string(n.id) + ", parent=" + std::to_string(n.parent) + ", token=" + std::to_string(n.token) +
               ", depth=" + std::to_string(n.depth) + ", slot=" + std::to_string(n.slot) + ", status='" +
               std::string(node_status_name(n.status)) + "')";
      });

  pyb::class_<ForwardView>(m, "Forward", "One recorded forward pass: queries (node ids), positions, slots written, "
                                         "and the mask rows as a bool array [queries x slots].")
      .def_readonly(kForwardQueries, &ForwardView::queries)
      .def_readonly(kForwardPositions, &ForwardView::positions)
      .def_readonly(kForwardSlots, &ForwardView::slots)
      .def_property_readonly(kForwardMask, [](const ForwardView& f) { return mask_array(f.mask); });

  pyb::class_<StepView>(m, "StepView", "The state of a decode after one step, as Trace.at() rebuilds it.")
      .def_readonly("step", &StepView::step)
      .def_readonly("phase", &StepView::phase)
      .def_readonly("nodes", &StepView::nodes)
      .def_readonly(kKeyframeSlotToNode, &StepView::slot_to_node)
      .def_readonly("added", &StepView::added)
      .def_readonly("gc_moves", &StepView::gc_moves)
      .def_property_readonly(kForwardField, [](const StepView& v) -> pyb::object {
        return v.forward ? pyb::cast(*v.forward) : pyb::none();
      })
      // A dict of the kv figures ({} when the step records none).
      .def_property_readonly(kKvField, [](const StepView& v) {
        return from_json(v.kv ? v.kv->to_json() : nlohmann::json::object());
      });

  pyb::class_<TraceReplay, std::shared_ptr<TraceReplay>> trace(
      m, "Trace", "A trace file (docs/trace-format.md) read by the C++ reader the CLI and GUI use, streamed as they stream it.");
  bind_trace_sequences(trace);
  trace
      .def(pyb::init([](const std::filesystem::path& path) {
             // Streamed as `inspect` reads it: one pass locates the records; a step's
             // records are parsed when at() or records asks (docs/benchmarks.md).
             auto t = std::make_shared<TraceReplay>(TraceReplay::open(path.string()));
             t->parse_unreplayed_records();  // the keyframes and the summary, checked now
             return t;
           }),
           pyb::arg("path"),
           "Opens the trace at `path`: checks every record's kind and step, the order of the steps, the keyframes and the "
           "summary (raises triescope.Error naming the line and field). A step's records are parsed when at() or records "
           "reads them (an error there names its line too), so memory is bounded by the biggest record and the tree, not "
           "the file.")
      .def_property_readonly("header", [](const TraceReplay& t) { return from_json(t.header()); })
      .def_property_readonly("summary", [](const TraceReplay& t) -> pyb::object {
        return t.summary() ? from_json(*t.summary()) : pyb::none();
      })
      .def_property_readonly("records", [](const std::shared_ptr<TraceReplay>& t) { return RecordsView{t}; })
      .def_property_readonly("steps", [](const TraceReplay& t) { return StepsView{static_cast<int32_t>(t.steps().size())}; })
      .def_property_readonly("vocab", &TraceReplay::vocab)
      .def("at", &TraceReplay::at, pyb::arg("step"), "The tree, slots and forward pass after `step`.");
}

void bind_trace_writer(pyb::module_& m) {

  pyb::class_<ExternalTraceWriter>(m, "TraceWriter", R"doc(Records another engine's tree decode as a TrieScope trace.

TraceWriter(path, algorithm="external", vocab=None, config=None, keyframe_interval=16, model=None)

Each step() call is one step of the engine (the first is the prefill): the
nodes it added, status changes, a KV compaction that ran before it, and the
forward pass it ran (queries, the mask rows it built, the position ids it
used). The header says algorithm "external" and config.engine = `algorithm`.
Nothing appears at `path` until close() (or the end of a `with` block
without an exception); a failed run leaves no file. `model` (a dict) is
provenance merged into the header's model object (engine version, model
file), which `triescope diff` skips.)doc")
      .def(pyb::init([](const std::filesystem::path& path, const std::string& algorithm, pyb::object vocab, pyb::object config,
                        int32_t keyframe_interval, pyb::object model) {
             std::vector<std::string> v;
             if (!vocab.is_none()) {
               if (pyb::isinstance<pyb::str>(vocab) || !pyb::isinstance<pyb::sequence>(vocab))
                 throw pyb::type_error("vocab: expected a list of token strings");
               size_t i = 0;
               for (auto s : vocab) {
                 if (!pyb::isinstance<pyb::str>(s)) throw pyb::type_error("vocab[" + std::to_string(i) + "]: expected a string");
                 v.push_back(s.cast<std::string>());
                 ++i;
               }
             }
             return std::make_unique<ExternalTraceWriter>(path.string(), algorithm, std::move(v), to_json(config, "config"), keyframe_interval,
                                                          to_json(model, "model"));
           }),
           pyb::arg("path"), pyb::arg("algorithm") = kExternalAlgorithm, pyb::arg("vocab") = pyb::none(),
           pyb::arg("config") = pyb::none(), pyb::arg("keyframe_interval") = 16, pyb::arg("model") = pyb::none())
      .def(
          "step",
          [](ExternalTraceWriter& w, pyb::object added, pyb::object queries, pyb::object mask, pyb::object positions,
             pyb::object gc, pyb::object status, pyb::object engine) {
            ExternalStep s;
            s.engine = to_json(engine, "engine");
            s.added = added_nodes(added, "added");
            s.status = status_changes(status, "status");
            if (!gc.is_none()) {
              s.has_gc = true;
              s.gc_moves = gc_moves(gc, "gc");
            }
            const bool any = !queries.is_none() || !mask.is_none() || !positions.is_none();
            if (any) {
              TS_CHECK(!queries.is_none() && !mask.is_none() && !positions.is_none(),
                       (queries.is_none() ? "queries" : mask.is_none() ? "mask" : "positions")
                           << ": a forward pass needs queries, mask and positions together");
              s.has_forward = true;
              s.queries = int32_vector(queries, "queries");
              s.mask = bit_mask(mask, "mask");
              s.positions = int32_vector(positions, "positions");
            }
            return w.step(s);
          },
          pyb::arg("added") = pyb::none(), pyb::arg("queries") = pyb::none(), pyb::arg("mask") = pyb::none(),
          pyb::arg("positions") = pyb::none(), pyb::arg("gc") = pyb::none(), pyb::arg("status") = pyb::none(),
          pyb::arg("engine") = pyb::none(),
          R"doc(Records the next step; returns the ids of the added nodes (dense, in order).

added: (parent, token, slot[, logprob]) per new node; parent -1 for a root,
  or an id returned earlier (or of a node earlier in this list); slot -1 for
  a node with no K/V (recorded as finished). A slot still held by a node is
  an error: slots are freed only by a gc.
queries: node ids fed in this step's forward pass.
mask: bool/uint8 [len(queries) x slots] numpy array or torch tensor, the rows
  the engine built (recorded as given; triescope.check judges them).
positions: the position id of each query, as the engine used them.
gc: (old slot, new slot) moves of a compaction run before this step; new
  slots are 0 .. len(gc) - 1; slots not named are freed.
status: {node: "pruned" | "finished" | "accepted" | "rejected" | "live"}.
engine: a dict the engine reported for this step (its KV cells as read
  back, its logits' top-k...), written as the step record's `engine` field.)doc")
      .def(
          "close",
          [](ExternalTraceWriter& w, pyb::object outputs) {
            std::vector<std::vector<int32_t>> outs;
            if (!outputs.is_none())
              for (const auto& r : int_rows(outputs, "outputs")) {
                // Token ids are int32 in a trace: 2^40 + 3 must not become 3.
                std::vector<int32_t>& o = outs.emplace_back();
                for (size_t j = 0; j < r.size(); ++j)
                  o.push_back(int32_checked(r[j], "outputs[" + std::to_string(outs.size() - 1) + "][" + std::to_string(j) + "]"));
              }
            w.close(outs);
          },
          pyb::arg("outputs") = pyb::none(), "Writes the summary (outputs: token lists, best first) and moves the file into place.")
      .def("abandon", &ExternalTraceWriter::abandon, "Drops the trace: nothing is left at the path.")
      .def_property_readonly("path", &ExternalTraceWriter::path)
      .def_property_readonly("steps", &ExternalTraceWriter::steps, "Steps recorded so far.")
      .def_property_readonly("num_slots", &ExternalTraceWriter::num_slots)
      .def_property_readonly("nodes", [](const ExternalTraceWriter& w) { return w.tree().nodes(); })
      .def_property_readonly("closed", &ExternalTraceWriter::closed)
      .def("__enter__", [](ExternalTraceWriter& w) -> ExternalTraceWriter& { return w; }, pyb::return_value_policy::reference)
      .def("__exit__", [](ExternalTraceWriter& w, pyb::object exc_type, pyb::object, pyb::object) {
        if (!exc_type.is_none()) w.abandon();
        else if (!w.closed()) w.close({});
        return false;
      });
}

}  // namespace

void bind_trace(pyb::module_& m) {
  bind_trace_reader(m);
  bind_trace_writer(m);
}

}  // namespace triescope::py
