// Implements client/dqctl/php_topic_dump.h: a small scanner for the SQL a
// mysqldump writes (not a SQL parser: only CREATE TABLE column names and
// INSERT ... VALUES tuples of dq_topic), and an RFC 4180 CSV reader.
#include "client/dqctl/php_topic_dump.h"

#include <cctype>
#include <string_view>

namespace dq::ctl {
namespace {

// The character a backslash escape of mysqldump stands for: \n \r \t \0 \Z,
// else the character itself (\' \" \\ \% \_).
char mysqldump_unescaped(char escaped) {
  constexpr std::string_view kEscapes = "nrt0Z";
  constexpr std::string_view kMeanings{"\n\r\t\0\x1a", 5};
  size_t at = kEscapes.find(escaped);
  return at == std::string_view::npos ? escaped : kMeanings[at];
}

constexpr const char* kTable = "dq_topic";

Status bad_dump(const std::string& why) { return Status(Code::kInvalid, "topics dump: " + why); }

void skip_space(const std::string& text, size_t* at) {
  while (*at < text.size() && isspace(static_cast<unsigned char>(text[*at]))) {
    ++*at;
  }
}

// Skips spaces, then takes `c` when it comes next.
bool take_char(const std::string& sql, size_t* at, char c) {
  skip_space(sql, at);
  if (*at < sql.size() && sql[*at] == c) {
    ++*at;
    return true;
  }
  return false;
}

// Case-insensitive "does text continue with word at *at"; advances past it.
bool take_word(const std::string& text, size_t* at, const std::string& word) {
  if (text.size() - *at < word.size()) {
    return false;
  }
  for (size_t i = 0; i < word.size(); ++i) {
    if (tolower(static_cast<unsigned char>(text[*at + i])) != word[i]) {
      return false;
    }
  }
  *at += word.size();
  return true;
}

// A table or column name, `quoted` or bare.
std::string take_name(const std::string& text, size_t* at) {
  skip_space(text, at);
  std::string name;
  if (*at < text.size() && text[*at] == '`') {
    size_t end = text.find('`', *at + 1);
    if (end == std::string::npos) {
      return {};
    }
    name = text.substr(*at + 1, end - *at - 1);
    *at = end + 1;
    return name;
  }
  while (*at < text.size() &&
         (isalnum(static_cast<unsigned char>(text[*at])) || text[*at] == '_' || text[*at] == '.')) {
    name.push_back(text[(*at)++]);
  }
  size_t dot = name.rfind('.');  // db.table
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

// A single-quoted SQL string with MySQL's escapes; *at is on the quote.
bool take_string(const std::string& text, size_t* at, std::string* out) {
  ++*at;
  while (*at < text.size()) {
    char c = text[(*at)++];
    if (c == '\'') {
      if (*at < text.size() && text[*at] == '\'') {  // '' is a quote
        out->push_back('\'');
        ++*at;
        continue;
      }
      return true;
    }
    if (c == '\\' && *at < text.size()) {
      out->push_back(mysqldump_unescaped(text[(*at)++]));
      continue;
    }
    out->push_back(c);
  }
  return false;
}

// The column names of CREATE TABLE `dq_topic` (...), in order.
std::vector<std::string> create_table_columns(const std::string& sql) {
  std::vector<std::string> columns;
  size_t at = 0;
  while ((at = sql.find("CREATE TABLE", at)) != std::string::npos) {
    at += 12;
    size_t name_at = at;
    skip_space(sql, &name_at);
    take_word(sql, &name_at, "if not exists");
    if (take_name(sql, &name_at) != kTable) {
      continue;
    }
    size_t open = sql.find('(', name_at);
    if (open == std::string::npos) {
      break;
    }
    size_t line = sql.find('\n', open);
    while (line != std::string::npos) {
      size_t start = line + 1;
      skip_space(sql, &start);
      if (start >= sql.size() || sql[start] != '`') {
        break;  // keys and ") ENGINE" end the list
      }
      columns.push_back(take_name(sql, &start));
      line = sql.find('\n', start);
    }
    break;
  }
  return columns;
}

// Where the next "INSERT INTO" (any case) starts at or after `from`, or npos.
size_t find_insert(const std::string& text, size_t from) {
  for (size_t scan = from; scan + 11 <= text.size(); ++scan) {
    size_t probe = scan;
    if (take_word(text, &probe, "insert into")) {
      return scan;
    }
  }
  return std::string::npos;
}

}  // namespace

Result<std::vector<PhpTopicRow>> read_topic_dump(const std::string& sql) {
  std::vector<std::string> table_columns = create_table_columns(sql);
  std::vector<PhpTopicRow> rows;
  size_t at = 0;
  for (;;) {
    size_t found = find_insert(sql, at);
    if (found == std::string::npos) {
      break;
    }
    at = found + 11;
    if (take_name(sql, &at) != kTable) {
      continue;
    }
    std::vector<std::string> columns = table_columns;
    if (take_char(sql, &at, '(')) {  // an explicit column list
      columns.clear();
      do {
        columns.push_back(take_name(sql, &at));
      } while (take_char(sql, &at, ','));
      take_char(sql, &at, ')');
    }
    skip_space(sql, &at);
    if (!take_word(sql, &at, "values")) {
      return bad_dump("INSERT INTO dq_topic without VALUES");
    }
    if (columns.empty()) {
      return bad_dump("INSERT INTO dq_topic has no column list and the dump has no CREATE TABLE");
    }
    for (;;) {  // (..),(..);
      if (!take_char(sql, &at, '(')) {
        return bad_dump("expected ( of a row");
      }
      std::vector<std::string> values;
      for (;;) {
        skip_space(sql, &at);
        std::string value;
        if (at < sql.size() && sql[at] == '\'') {
          if (!take_string(sql, &at, &value)) {
            return bad_dump("a string is not closed");
          }
        } else {
          while (at < sql.size() && sql[at] != ',' && sql[at] != ')') {
            value.push_back(sql[at++]);
          }
          while (!value.empty() && isspace(static_cast<unsigned char>(value.back()))) {
            value.pop_back();
          }
          if (value == "NULL" || value == "null") {
            value.clear();
          }
        }
        values.push_back(value);
        if (take_char(sql, &at, ',')) {
          continue;
        }
        if (take_char(sql, &at, ')')) {
          break;
        }
        return bad_dump("a row is not closed");
      }
      if (values.size() != columns.size()) {
        return bad_dump("a row has " + std::to_string(values.size()) + " values for " +
                        std::to_string(columns.size()) + " columns");
      }
      PhpTopicRow row;
      for (size_t i = 0; i < columns.size(); ++i) {
        row[columns[i]] = values[i];
      }
      rows.push_back(row);
      skip_space(sql, &at);
      if (at < sql.size() && sql[at] == ',') {
        ++at;
        continue;
      }
      break;  // ';'
    }
  }
  return rows;
}

Result<std::vector<PhpTopicRow>> read_topic_csv(const std::string& csv) {
  size_t first_line = csv.find('\n');
  std::string header = csv.substr(0, first_line);
  char separator =
      header.find(',') == std::string::npos && header.find(';') != std::string::npos ? ';' : ',';
  std::vector<std::vector<std::string>> records(1);
  std::string field;
  bool quoted = false, was_quoted = false;
  auto end_field = [&] {
    if (!was_quoted && field == "\\N") {
      field.clear();
    }
    records.back().push_back(field);
    field.clear();
    was_quoted = false;
  };
  for (size_t i = 0; i < csv.size(); ++i) {
    char c = csv[i];
    if (quoted) {
      if (c == '"' && i + 1 < csv.size() && csv[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = was_quoted = true;
    } else if (c == separator) {
      end_field();
    } else if (c == '\n') {
      end_field();
      records.emplace_back();
    } else if (c != '\r') {
      field.push_back(c);
    }
  }
  if (quoted) {
    return bad_dump("a quoted CSV field is not closed");
  }
  if (!field.empty() || !records.back().empty()) {
    end_field();
  }
  std::vector<PhpTopicRow> rows;
  const std::vector<std::string>& names = records[0];
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].empty() || (records[r].size() == 1 && records[r][0].empty())) {
      continue;
    }
    if (records[r].size() != names.size()) {
      return bad_dump("CSV line " + std::to_string(r + 1) + " has " +
                      std::to_string(records[r].size()) + " fields for " +
                      std::to_string(names.size()) + " columns");
    }
    PhpTopicRow row;
    for (size_t i = 0; i < names.size(); ++i) {
      row[names[i]] = records[r][i];
    }
    rows.push_back(row);
  }
  return rows;
}

Result<std::vector<PhpTopicRow>> read_php_topic_rows(const std::string& text) {
  if (find_insert(text, 0) != std::string::npos) {
    return read_topic_dump(text);
  }
  return read_topic_csv(text);
}

}  // namespace dq::ctl
