#include "gui/json_tree_model.h"

namespace triescope::gui {

JsonTreeModel::JsonTreeModel(QObject* parent) : QAbstractItemModel(parent), root_(std::make_unique<Item>()) {}
JsonTreeModel::~JsonTreeModel() = default;

void JsonTreeModel::build(Item* item, const nlohmann::json& j) {
  auto add = [&](const QString& key, const QString& path, const nlohmann::json& v) {
    auto c = std::make_unique<Item>();
    c->key = key;
    c->path = path;
    c->parent = item;
    c->row = static_cast<int>(item->children.size());
    build(c.get(), v);
    item->children.push_back(std::move(c));
  };
  if (j.is_object()) {
    item->value = QStringLiteral("{%1 fields}").arg(j.size());
    for (auto& [k, v] : j.items())
      add(QString::fromStdString(k), item->path.isEmpty() ? QString::fromStdString(k) : item->path + "." + QString::fromStdString(k), v);
  } else if (j.is_array()) {
    item->value = QStringLiteral("[%1]").arg(j.size());
    const size_t n = std::min<size_t>(j.size(), kMaxChildren);
    // Short arrays of scalars read better inline.
    bool scalars = j.size() <= 16;
    for (auto& v : j) scalars = scalars && !v.is_structured();
    if (scalars && !j.empty()) {
      item->value = QString::fromStdString(j.dump());
      return;
    }
    for (size_t i = 0; i < n; ++i) add(QStringLiteral("[%1]").arg(i), item->path + QStringLiteral("[%1]").arg(i), j[i]);
    if (j.size() > n) {
      auto c = std::make_unique<Item>();
      c->key = QStringLiteral("...");
      c->value = QStringLiteral("%1 more").arg(j.size() - n);
      c->parent = item;
      c->row = static_cast<int>(item->children.size());
      item->children.push_back(std::move(c));
    }
  } else if (j.is_string()) {
    item->value = QString::fromStdString(j.get<std::string>());
  } else {
    item->value = QString::fromStdString(j.dump());
  }
}

void JsonTreeModel::setJson(const nlohmann::json& j) {
  beginResetModel();
  root_ = std::make_unique<Item>();
  if (!j.is_null()) build(root_.get(), j);
  endResetModel();
}

QModelIndex JsonTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (column < 0 || column >= 2 || row < 0) return {};
  const Item* p = parent.isValid() ? static_cast<const Item*>(parent.internalPointer()) : root_.get();
  if (parent.isValid() && parent.column() != 0) return {};
  if (row >= static_cast<int>(p->children.size())) return {};
  return createIndex(row, column, p->children[static_cast<size_t>(row)].get());
}

QModelIndex JsonTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  const Item* it = static_cast<const Item*>(child.internalPointer());
  const Item* p = it->parent;
  if (!p || p == root_.get()) return {};
  return createIndex(p->row, 0, const_cast<Item*>(p));
}

int JsonTreeModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() && parent.column() != 0) return 0;
  const Item* p = parent.isValid() ? static_cast<const Item*>(parent.internalPointer()) : root_.get();
  return static_cast<int>(p->children.size());
}

int JsonTreeModel::columnCount(const QModelIndex&) const { return 2; }

QVariant JsonTreeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Item* it = static_cast<const Item*>(index.internalPointer());
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return index.column() == 0 ? it->key : it->value;
  if (role == PathRole) return it->path;
  return {};
}

QVariant JsonTreeModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  return section == 0 ? QStringLiteral("field") : QStringLiteral("value");
}

}  // namespace triescope::gui
