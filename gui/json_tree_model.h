// Item model over a JSON value (the step record's "constraint"/"verify"
// extras, the header): columns key and value, objects and arrays expand.
#pragma once
#include <QAbstractItemModel>

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

namespace triescope::gui {

class JsonTreeModel final : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Roles { PathRole = Qt::UserRole + 1 };  // dotted JSON path of the item, e.g. "beams[2].valid"
  // Arrays longer than this show their first kMaxChildren entries and a "..." row.
  static constexpr int kMaxChildren = 512;

  explicit JsonTreeModel(QObject* parent = nullptr);
  ~JsonTreeModel() override;
  void setJson(const nlohmann::json& j);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  struct Item {
    QString key, value, path;
    Item* parent = nullptr;
    int row = 0;
    std::vector<std::unique_ptr<Item>> children;
  };
  void build(Item* item, const nlohmann::json& j);
  std::unique_ptr<Item> root_;
};

}  // namespace triescope::gui
